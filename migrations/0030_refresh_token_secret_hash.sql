ALTER TABLE `refresh_tokens` ADD `secret_hash` text;--> statement-breakpoint
ALTER TABLE `refresh_tokens` DROP COLUMN `previous_hashes`;