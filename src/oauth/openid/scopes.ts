/** Every scope /oauth/authorize and /oauth/token take (OpenID Connect's); any other is `invalid_scope`. */
export const SUPPORTED_SCOPES = ["openid", "profile", "email", "phone", "address", "offline_access"] as const;
export type Scope = (typeof SUPPORTED_SCOPES)[number];
