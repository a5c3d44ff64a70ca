-- Written by hand, not as drizzle-kit generated it: its rebuild of `mails` (PRAGMA foreign_keys=OFF,
-- DROP TABLE mails) would, on D1, where that pragma has no effect, cascade into mail_events and
-- delete every mail's events. Here the events are copied aside first, both tables are rebuilt,
-- and the events put back; test/cli/migrations.test.ts runs this on data.
CREATE TABLE `signin_requests` (
	`email_key` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`created` integer NOT NULL,
	`expires` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `mail_events_copy` AS SELECT `id`, `mail_id`, `event`, `timestamp` FROM `mail_events`;--> statement-breakpoint
DROP TABLE `mail_events`;--> statement-breakpoint
CREATE TABLE `__new_mails` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer,
	`template` text NOT NULL,
	`sender_name` text,
	`sender_email` text NOT NULL,
	`user_name` text,
	`user_email` text NOT NULL,
	`created` integer NOT NULL,
	`token` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_mails`("id", "user_id", "template", "sender_name", "sender_email", "user_name", "user_email", "created", "token") SELECT "id", "user_id", "template", "sender_name", "sender_email", "user_name", "user_email", "created", "token" FROM `mails`;--> statement-breakpoint
DROP TABLE `mails`;--> statement-breakpoint
ALTER TABLE `__new_mails` RENAME TO `mails`;--> statement-breakpoint
CREATE UNIQUE INDEX `mails_token_idx` ON `mails` (`token`);--> statement-breakpoint
CREATE INDEX `mails_user_created_idx` ON `mails` (`user_id`,`created`);--> statement-breakpoint
CREATE INDEX `mails_unowned_email_idx` ON `mails` (`user_email`) WHERE "mails"."user_id" IS NULL;--> statement-breakpoint
CREATE TABLE `mail_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`mail_id` integer NOT NULL,
	`event` text NOT NULL,
	`timestamp` integer NOT NULL,
	FOREIGN KEY (`mail_id`) REFERENCES `mails`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `mail_events`("id", "mail_id", "event", "timestamp") SELECT "id", "mail_id", "event", "timestamp" FROM `mail_events_copy`;--> statement-breakpoint
DROP TABLE `mail_events_copy`;--> statement-breakpoint
CREATE INDEX `mail_events_mail_idx` ON `mail_events` (`mail_id`,`timestamp`);
