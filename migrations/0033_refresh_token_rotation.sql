-- Whether a client's refresh tokens rotate on each use (the default, and always for a public
-- client) or are persistent: checked without D1, for the client's grants started after the change
-- (src/oauth/persistent-refresh-tokens.ts, docs/oauth.md "Persistent refresh tokens").
ALTER TABLE `clients` ADD `refresh_token_rotation` integer DEFAULT true NOT NULL;