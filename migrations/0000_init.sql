CREATE TABLE `clients` (
	`id` text PRIMARY KEY NOT NULL,
	`merchant_id` integer NOT NULL,
	`name` text NOT NULL,
	`alias` text DEFAULT '' NOT NULL,
	`domain` text DEFAULT '' NOT NULL,
	`secret_hash` text NOT NULL,
	`signing_secret_sealed` text,
	`redirect_uris` text DEFAULT '[]' NOT NULL,
	`default_redirect_uri` text,
	`fields` text DEFAULT '{}' NOT NULL,
	`css` text DEFAULT '{}' NOT NULL,
	`terms_css` text DEFAULT '{}' NOT NULL,
	`grant_types` text DEFAULT '[]' NOT NULL,
	`access_token_lifetime` integer DEFAULT 604800 NOT NULL,
	`auto_approve` integer DEFAULT false NOT NULL,
	`enable_sso` integer DEFAULT false NOT NULL,
	`unregistered_payments` integer DEFAULT false NOT NULL,
	`universal_data_access` integer DEFAULT false NOT NULL,
	`admin` integer DEFAULT false NOT NULL,
	`ip_allow_list` text DEFAULT '[]' NOT NULL,
	`rate_limit` text,
	`jwt` integer DEFAULT false NOT NULL,
	`resources` text DEFAULT '[]' NOT NULL,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	`updated` integer DEFAULT (unixepoch()) NOT NULL,
	FOREIGN KEY (`merchant_id`) REFERENCES `merchants`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `clients_merchant_idx` ON `clients` (`merchant_id`);--> statement-breakpoint
CREATE TABLE `device_fingerprints` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`hash` text NOT NULL,
	`user_id` integer NOT NULL,
	`client_id` text NOT NULL,
	`platform` text NOT NULL,
	`application_name` text NOT NULL,
	`application_version` text,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_fingerprints_user_hash_idx` ON `device_fingerprints` (`user_id`,`hash`);--> statement-breakpoint
CREATE INDEX `device_fingerprints_client_idx` ON `device_fingerprints` (`client_id`);--> statement-breakpoint
CREATE TABLE `digital_contents` (
	`id` integer PRIMARY KEY NOT NULL,
	`product_id` integer NOT NULL,
	`parent_product_id` integer,
	`client_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`order_id` integer,
	`status` integer DEFAULT 1 NOT NULL,
	`count` integer DEFAULT 1 NOT NULL,
	`bundle_id` integer,
	`status_msg` text,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	`updated` integer DEFAULT (unixepoch()) NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `digital_contents_client_user_idx` ON `digital_contents` (`client_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_product_idx` ON `digital_contents` (`client_id`,`product_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_parent_idx` ON `digital_contents` (`client_id`,`parent_product_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_status_idx` ON `digital_contents` (`client_id`,`status`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_updated_idx` ON `digital_contents` (`client_id`,`updated`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_created_idx` ON `digital_contents` (`client_id`,`created`);--> statement-breakpoint
CREATE TABLE `mail_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`mail_id` integer NOT NULL,
	`event` text NOT NULL,
	`timestamp` integer NOT NULL,
	FOREIGN KEY (`mail_id`) REFERENCES `mails`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mail_events_mail_idx` ON `mail_events` (`mail_id`,`timestamp`);--> statement-breakpoint
CREATE TABLE `mails` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
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
CREATE UNIQUE INDEX `mails_token_idx` ON `mails` (`token`);--> statement-breakpoint
CREATE INDEX `mails_user_created_idx` ON `mails` (`user_id`,`created`);--> statement-breakpoint
CREATE TABLE `merchants` (
	`id` integer PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	`updated` integer DEFAULT (unixepoch()) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `products` (
	`id` integer PRIMARY KEY NOT NULL,
	`parent_product_id` integer,
	`client_id` text NOT NULL,
	`type` integer DEFAULT 1 NOT NULL,
	`bundle` integer DEFAULT 0 NOT NULL,
	`code` text,
	`name` text NOT NULL,
	`description` text,
	`url` text,
	`price` integer DEFAULT 0 NOT NULL,
	`vat` integer DEFAULT 0 NOT NULL,
	`currency` text NOT NULL,
	`payment_options` integer DEFAULT 2 NOT NULL,
	`quantity_limit` integer,
	`quantity_count` integer DEFAULT 0 NOT NULL,
	`sale_start` integer,
	`sale_stop` integer,
	`available_start` integer,
	`available_stop` integer,
	`subscription_period` integer,
	`subscription_renew_price` integer,
	`subscription_renew_period` integer,
	`subscription_auto_renew` integer DEFAULT false NOT NULL,
	`subscription_auto_renew_lock_period` integer,
	`subscription_auto_renew_disabled` integer DEFAULT false NOT NULL,
	`subscription_grace_period` integer,
	`subscription_email_receipt_limit` integer,
	`subscription_final_end_date` integer,
	`allow_multi_sales` integer DEFAULT false NOT NULL,
	`status` integer DEFAULT 0 NOT NULL,
	`purchase_uri` text,
	`changed_by` integer,
	`changed` integer DEFAULT (unixepoch()) NOT NULL,
	`created_by` integer,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `products_client_status_idx` ON `products` (`client_id`,`status`);--> statement-breakpoint
CREATE INDEX `products_client_type_idx` ON `products` (`client_id`,`type`);--> statement-breakpoint
CREATE INDEX `products_client_changed_idx` ON `products` (`client_id`,`changed`);--> statement-breakpoint
CREATE INDEX `products_client_created_idx` ON `products` (`client_id`,`created`);--> statement-breakpoint
CREATE INDEX `products_client_parent_idx` ON `products` (`client_id`,`parent_product_id`);--> statement-breakpoint
CREATE INDEX `products_client_code_idx` ON `products` (`client_id`,`code`);--> statement-breakpoint
CREATE INDEX `products_client_name_idx` ON `products` (`client_id`,`name`);--> statement-breakpoint
CREATE INDEX `products_client_price_idx` ON `products` (`client_id`,`price`);--> statement-breakpoint
CREATE TABLE `refresh_tokens` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`token_hash` text NOT NULL,
	`client_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`scope` text DEFAULT '' NOT NULL,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	`expires` integer NOT NULL,
	`revoked` integer,
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `refresh_tokens_hash_idx` ON `refresh_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_user_client_idx` ON `refresh_tokens` (`user_id`,`client_id`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_client_idx` ON `refresh_tokens` (`client_id`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_expires_idx` ON `refresh_tokens` (`expires`);--> statement-breakpoint
CREATE TABLE `user_accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`domain` text NOT NULL,
	`account_user_id` text,
	`username` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_accounts_user_idx` ON `user_accounts` (`user_id`);--> statement-breakpoint
CREATE TABLE `user_addresses` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`type` text NOT NULL,
	`formatted` text,
	`street_address` text,
	`postal_code` text,
	`locality` text,
	`region` text,
	`country` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_addresses_user_idx` ON `user_addresses` (`user_id`,`type`);--> statement-breakpoint
CREATE TABLE `user_clients` (
	`client_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`merchant_id` integer NOT NULL,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	PRIMARY KEY(`client_id`, `user_id`),
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_clients_user_idx` ON `user_clients` (`user_id`);--> statement-breakpoint
CREATE INDEX `user_clients_merchant_idx` ON `user_clients` (`merchant_id`,`user_id`);--> statement-breakpoint
CREATE TABLE `user_emails` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`value` text NOT NULL,
	`type` text DEFAULT 'other' NOT NULL,
	`is_primary` integer DEFAULT false NOT NULL,
	`verified` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `user_emails_value_idx` ON `user_emails` (`value`);--> statement-breakpoint
CREATE INDEX `user_emails_user_idx` ON `user_emails` (`user_id`);--> statement-breakpoint
CREATE TABLE `user_phone_numbers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`value` text NOT NULL,
	`type` text DEFAULT 'mobile' NOT NULL,
	`is_primary` integer DEFAULT false NOT NULL,
	`verified` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_phone_numbers_user_idx` ON `user_phone_numbers` (`user_id`);--> statement-breakpoint
CREATE INDEX `user_phone_numbers_value_idx` ON `user_phone_numbers` (`value`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY NOT NULL,
	`legacy_id` text,
	`uuid` text NOT NULL,
	`password_hash` text,
	`status` integer DEFAULT 0 NOT NULL,
	`email` text,
	`email_verified` integer,
	`phone_number` text,
	`phone_number_verified` integer,
	`given_name` text,
	`family_name` text,
	`formatted_name` text,
	`display_name` text,
	`preferred_username` text,
	`url` text,
	`photo` text,
	`gender` text DEFAULT 'undisclosed' NOT NULL,
	`birthday` text DEFAULT '0000-00-00' NOT NULL,
	`locale` text,
	`utc_offset` text,
	`verified` integer,
	`tracking` integer DEFAULT false NOT NULL,
	`published` integer DEFAULT (unixepoch()) NOT NULL,
	`updated` integer DEFAULT (unixepoch()) NOT NULL,
	`last_logged_in` integer,
	`last_authenticated` integer,
	`imported` integer,
	`migrated` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_uuid_idx` ON `users` (`uuid`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_legacy_id_idx` ON `users` (`legacy_id`);--> statement-breakpoint
CREATE INDEX `users_email_idx` ON `users` (`email`);--> statement-breakpoint
CREATE INDEX `users_status_published_idx` ON `users` (`status`,`published`);--> statement-breakpoint
CREATE INDEX `users_status_updated_idx` ON `users` (`status`,`updated`);--> statement-breakpoint
CREATE INDEX `users_family_name_idx` ON `users` (`family_name`);--> statement-breakpoint
CREATE INDEX `users_given_name_idx` ON `users` (`given_name`);--> statement-breakpoint
CREATE INDEX `users_display_name_idx` ON `users` (`display_name`);--> statement-breakpoint
CREATE INDEX `users_phone_number_idx` ON `users` (`phone_number`);