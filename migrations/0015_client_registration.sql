ALTER TABLE `clients` ADD `logo_uri` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `client_uri` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `post_logout_redirect_uris` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `clients` ADD `backchannel_logout_uri` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `backchannel_logout_session_required` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `clients` ADD `token_endpoint_auth_method` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `scope` text;--> statement-breakpoint
ALTER TABLE `clients` ADD `registration_token_hash` text;