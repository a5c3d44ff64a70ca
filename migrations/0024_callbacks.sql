CREATE TABLE `callback_changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`client_id` text NOT NULL,
	`merchant_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`changed_fields` text NOT NULL,
	`time` integer NOT NULL,
	`failed` integer
);
--> statement-breakpoint
CREATE INDEX `callback_changes_client_idx` ON `callback_changes` (`client_id`,`failed`,`id`);--> statement-breakpoint
CREATE INDEX `callback_changes_waiting_idx` ON `callback_changes` (`failed`,`time`);--> statement-breakpoint
ALTER TABLE `clients` ADD `callback_url` text;