ALTER TABLE `refresh_tokens` ADD `family` text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX `refresh_tokens_family_idx` ON `refresh_tokens` (`family`);--> statement-breakpoint
-- Tokens issued before families existed are each a family of their own.
UPDATE `refresh_tokens` SET `family` = 'token-' || `id` WHERE `family` = '';
