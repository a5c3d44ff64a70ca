ALTER TABLE `clients` ADD `previous_secret_hash` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `previous_secret_expires` integer;--> statement-breakpoint
ALTER TABLE `clients` ADD `disabled` integer;