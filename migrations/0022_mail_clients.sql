ALTER TABLE `mails` ADD `client_id` text REFERENCES clients(id) ON DELETE set null;--> statement-breakpoint
CREATE INDEX `mails_user_client_created_idx` ON `mails` (`user_id`,`client_id`,`created`);