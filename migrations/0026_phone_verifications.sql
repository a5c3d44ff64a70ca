CREATE TABLE `phone_verifications` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`client_id` text NOT NULL,
	`merchant_id` integer NOT NULL,
	`phone_number` text NOT NULL,
	`code_hash` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created` integer NOT NULL,
	`expires` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `phone_verifications_expires_idx` ON `phone_verifications` (`expires`);--> statement-breakpoint
CREATE INDEX `phone_verifications_number_idx` ON `phone_verifications` (`merchant_id`,`phone_number`,`created`);