-- Written by hand, not as drizzle-kit generated it (its rebuild relies on PRAGMA foreign_keys=OFF,
-- which D1 ignores: dropping `products` while `digital_contents` refers to it would fail). SPiD's
-- value sets (schemas/value-sets.ts): product types 1 product -> 0 default, 3 digital content ->
-- 1 (2 subscription stays); digital-content status 1 active -> 3 available (0, -1, -2 stay); the
-- new defaults 0 and 3. `digital_contents` is copied aside, `products` rebuilt, then
-- `digital_contents` rebuilt from the copy; test/cli/migrations.test.ts runs this on data.
CREATE TABLE `digital_contents_copy` AS SELECT * FROM `digital_contents`;--> statement-breakpoint
DROP TABLE `digital_contents`;--> statement-breakpoint
CREATE TABLE `__new_products` (
	`id` integer PRIMARY KEY NOT NULL,
	`parent_product_id` integer,
	`client_id` text NOT NULL,
	`type` integer DEFAULT 0 NOT NULL,
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
);--> statement-breakpoint
INSERT INTO `__new_products`("id", "parent_product_id", "client_id", "type", "bundle", "code", "name", "description", "url", "price", "vat", "currency", "payment_options", "quantity_limit", "quantity_count", "sale_start", "sale_stop", "available_start", "available_stop", "subscription_period", "subscription_renew_price", "subscription_renew_period", "subscription_auto_renew", "subscription_auto_renew_lock_period", "subscription_auto_renew_disabled", "subscription_grace_period", "subscription_email_receipt_limit", "subscription_final_end_date", "allow_multi_sales", "status", "purchase_uri", "changed_by", "changed", "created_by", "created") SELECT "id", "parent_product_id", "client_id", CASE "type" WHEN 1 THEN 0 WHEN 3 THEN 1 ELSE "type" END, "bundle", "code", "name", "description", "url", "price", "vat", "currency", "payment_options", "quantity_limit", "quantity_count", "sale_start", "sale_stop", "available_start", "available_stop", "subscription_period", "subscription_renew_price", "subscription_renew_period", "subscription_auto_renew", "subscription_auto_renew_lock_period", "subscription_auto_renew_disabled", "subscription_grace_period", "subscription_email_receipt_limit", "subscription_final_end_date", "allow_multi_sales", "status", "purchase_uri", "changed_by", "changed", "created_by", "created" FROM `products`;--> statement-breakpoint
DROP TABLE `products`;--> statement-breakpoint
ALTER TABLE `__new_products` RENAME TO `products`;--> statement-breakpoint
CREATE INDEX `products_client_idx` ON `products` (`client_id`);--> statement-breakpoint
CREATE INDEX `products_client_status_idx` ON `products` (`client_id`,`status`);--> statement-breakpoint
CREATE INDEX `products_client_type_idx` ON `products` (`client_id`,`type`);--> statement-breakpoint
CREATE INDEX `products_client_changed_idx` ON `products` (`client_id`,`changed`);--> statement-breakpoint
CREATE INDEX `products_client_created_idx` ON `products` (`client_id`,`created`);--> statement-breakpoint
CREATE INDEX `products_client_parent_idx` ON `products` (`client_id`,`parent_product_id`);--> statement-breakpoint
CREATE INDEX `products_client_code_idx` ON `products` (`client_id`,`code`);--> statement-breakpoint
CREATE INDEX `products_client_name_idx` ON `products` (`client_id`,`name`);--> statement-breakpoint
CREATE INDEX `products_client_price_idx` ON `products` (`client_id`,`price`);--> statement-breakpoint
CREATE TABLE `digital_contents` (
	`id` integer PRIMARY KEY NOT NULL,
	`product_id` integer NOT NULL,
	`parent_product_id` integer,
	`client_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`order_id` integer,
	`status` integer DEFAULT 3 NOT NULL,
	`count` integer DEFAULT 1 NOT NULL,
	`bundle_id` integer,
	`status_msg` text,
	`created` integer DEFAULT (unixepoch()) NOT NULL,
	`updated` integer DEFAULT (unixepoch()) NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`client_id`) REFERENCES `clients`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);--> statement-breakpoint
INSERT INTO `digital_contents`("id", "product_id", "parent_product_id", "client_id", "user_id", "order_id", "status", "count", "bundle_id", "status_msg", "created", "updated") SELECT "id", "product_id", "parent_product_id", "client_id", "user_id", "order_id", CASE "status" WHEN 1 THEN 3 ELSE "status" END, "count", "bundle_id", "status_msg", "created", "updated" FROM `digital_contents_copy`;--> statement-breakpoint
DROP TABLE `digital_contents_copy`;--> statement-breakpoint
CREATE INDEX `digital_contents_client_idx` ON `digital_contents` (`client_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_user_idx` ON `digital_contents` (`client_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_product_idx` ON `digital_contents` (`client_id`,`product_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_parent_idx` ON `digital_contents` (`client_id`,`parent_product_id`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_status_idx` ON `digital_contents` (`client_id`,`status`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_updated_idx` ON `digital_contents` (`client_id`,`updated`);--> statement-breakpoint
CREATE INDEX `digital_contents_client_created_idx` ON `digital_contents` (`client_id`,`created`);
