-- A user whose status becomes one that refuses sign-in (inactive -1, blocked -2, deleted -3), by
-- whatever write (a bulk import included), is listed here in the same transaction; the sign-out
-- job (src/jobs/status-sign-outs.ts, every minute) ends the user's sessions and grants, access
-- tokens included, and deletes the row (docs/security.md "A status that refuses sign-in").
CREATE TABLE `pending_sign_outs` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`requested` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pending_sign_outs_requested_idx` ON `pending_sign_outs` (`requested`);
--> statement-breakpoint
CREATE TRIGGER `pending_sign_outs_on_refused_status` AFTER UPDATE OF `status` ON `users`
  WHEN NEW.`status` < 0 AND OLD.`status` >= 0
BEGIN
  INSERT OR REPLACE INTO `pending_sign_outs` (`user_id`, `requested`) VALUES (NEW.`id`, unixepoch());
END;
