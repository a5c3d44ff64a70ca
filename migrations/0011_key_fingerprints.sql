-- The table as drizzle-kit generated it; the trigger written by hand. A recorded fingerprint never
-- changes: an import under another DATA_PROTECTION_KEY upserts a different one, and the trigger
-- aborts the import's whole batch with this message (scripts/lib/import.ts recognizes it).
-- Deleting the row is the deliberate way to move a database to another key.
CREATE TABLE `key_fingerprints` (
	`name` text PRIMARY KEY NOT NULL,
	`fingerprint` text NOT NULL,
	`created` integer DEFAULT (unixepoch()) NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER `key_fingerprints_unchanged` BEFORE UPDATE OF `fingerprint` ON `key_fingerprints`
WHEN OLD.`fingerprint` IS NOT NEW.`fingerprint`
BEGIN
  SELECT RAISE(ABORT, 'the database holds data protected under another DATA_PROTECTION_KEY');
END;
