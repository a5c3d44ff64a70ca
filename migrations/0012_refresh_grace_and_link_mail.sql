ALTER TABLE `refresh_tokens` ADD `parent_id` integer;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `rotated` integer;--> statement-breakpoint
ALTER TABLE `signin_requests` ADD `mailed` integer;