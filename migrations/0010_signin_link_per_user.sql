-- One live sign-in link per user (the spec: "at most one active token per user"), not per address:
-- the row is keyed by its subject, `user:<id>` for an address that has a user, `email:<address>`
-- for one that has none. Links live 5 minutes; those made before this migration are dropped
-- rather than carried over under keys of the old shape.
DELETE FROM `signin_requests`;--> statement-breakpoint
ALTER TABLE `signin_requests` RENAME COLUMN `email_key` TO `subject`;
