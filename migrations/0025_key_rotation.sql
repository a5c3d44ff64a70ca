-- Written by hand: the data-protection key can now be rotated (docs/operations.md "Rotating the
-- data-protection key"). The row DATA_PROTECTION_KEY_PREVIOUS holds the previous key's fingerprint
-- while data may still be protected under it; DATA_PROTECTION_KEY's fingerprint may change only to
-- move the key it names there, as the Worker does when a rotation starts. An import under another
-- key still upserts a different fingerprint with no such row, and the trigger still aborts its
-- whole batch with the message scripts/lib/import.ts recognizes.
DROP TRIGGER `key_fingerprints_unchanged`;
--> statement-breakpoint
CREATE TRIGGER `key_fingerprints_unchanged` BEFORE UPDATE OF `fingerprint` ON `key_fingerprints`
WHEN OLD.`fingerprint` IS NOT NEW.`fingerprint` AND NOT EXISTS (
  SELECT 1 FROM `key_fingerprints` AS `previous`
  WHERE `previous`.`name` = OLD.`name` || '_PREVIOUS' AND `previous`.`fingerprint` = OLD.`fingerprint`
)
BEGIN
  SELECT RAISE(ABORT, 'the database holds data protected under another DATA_PROTECTION_KEY');
END;
