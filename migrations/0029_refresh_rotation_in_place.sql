ALTER TABLE `refresh_tokens` ADD `rotated_from` text;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `previous_hashes` text;