ALTER TABLE `clients` ADD `previous_signing_secret_sealed` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `previous_signing_secret_expires` integer;