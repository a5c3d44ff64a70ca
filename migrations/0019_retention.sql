CREATE INDEX `sessions_expires_idx` ON `sessions` (`expires`);--> statement-breakpoint
CREATE INDEX `signin_requests_expires_idx` ON `signin_requests` (`expires`);