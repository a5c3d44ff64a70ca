ALTER TABLE `refresh_tokens` ADD `parent_id` integer;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `rotated` integer;--> statement-breakpoint
ALTER TABLE `signin_requests` ADD `mailed` integer;--> statement-breakpoint
-- Written by hand: a link made before this migration was mailed when it was made (rows were
-- withdrawn when their mail failed), so it keeps holding the next request back for its minute.
UPDATE `signin_requests` SET `mailed` = `created` WHERE `mailed` IS NULL;
