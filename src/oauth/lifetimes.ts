/** Bounds on token lifetimes, shared by the import (Node) and the Worker, so free of Worker types. */

/** The longest `accessTokenLifetime` a client may have (a year), so the longest any access token lives. */
export const MAX_ACCESS_TOKEN_LIFETIME = 31_536_000;
