ALTER TABLE `clients` ADD `id_token_signed_response_alg` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `access_token_signed_response_alg` text;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `auth_time` integer;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `sid` text;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `method` text;--> statement-breakpoint
ALTER TABLE `refresh_tokens` ADD `claims` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `method` text;