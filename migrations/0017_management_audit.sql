CREATE TABLE `audit_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`merchant_id` integer NOT NULL,
	`client_id` text NOT NULL,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`user_id` integer,
	`target_client_id` text,
	`ip` text,
	`detail` text
);
--> statement-breakpoint
CREATE INDEX `audit_events_merchant_idx` ON `audit_events` (`merchant_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_merchant_user_idx` ON `audit_events` (`merchant_id`,`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_merchant_client_idx` ON `audit_events` (`merchant_id`,`client_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_user_idx` ON `audit_events` (`user_id`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_at_idx` ON `audit_events` (`at`);