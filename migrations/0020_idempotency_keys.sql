CREATE TABLE `idempotency_keys` (
	`client_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`resource` text NOT NULL,
	`created` integer NOT NULL,
	PRIMARY KEY(`client_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created`);