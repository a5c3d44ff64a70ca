-- UUIDs compare without regard to case; the import stores them in lower case from now on.
-- Two users whose UUIDs differ only in case make this fail on users_uuid_idx: resolve them first.
UPDATE users SET uuid = lower(uuid) WHERE uuid <> lower(uuid);
