CREATE INDEX `digital_contents_client_idx` ON `digital_contents` (`client_id`);--> statement-breakpoint
CREATE INDEX `products_client_idx` ON `products` (`client_id`);