-- 0003's copy trigger gained its WHEN clause (fire only on a change) after 0003 had already run
-- on local databases; this brings every database to the same trigger.
DROP TRIGGER IF EXISTS `users_copy_to_connections`;--> statement-breakpoint
CREATE TRIGGER `users_copy_to_connections` AFTER UPDATE OF `status`, `published`, `updated` ON `users`
WHEN OLD.`status` IS NOT NEW.`status` OR OLD.`published` IS NOT NEW.`published` OR OLD.`updated` IS NOT NEW.`updated`
BEGIN
  UPDATE `user_clients` SET `status` = NEW.`status`, `published` = NEW.`published`, `updated` = NEW.`updated`
  WHERE `user_id` = NEW.`id`;
END;
