/**
 * The /api/2 endpoints a client may be granted (the import's `apiEndpoints`), by the name of
 * their path, and those of /oauth that take an access token (`exchange`, `userinfo`, `register`). Status and version are public and need no grant.
 */
export const API_ENDPOINTS = [
  "clients",
  "me",
  "users",
  "user",
  "mail",
  "digitalcontents",
  "products",
  "devices",
  "exchange",
  "signin",
  "describe",
  "user/product",
  "user/products",
  "userinfo",
  "register",
  "user/status",
  "user/logout",
  "user/connection",
  "user/erase",
  "user/create",
  "user/update",
  "product",
  "client/secret",
  "client/signing-secret",
  "client/status",
  "client/callbacks",
  "client/create",
  "client/update",
  "user/export",
  "audit",
  "keys",
] as const;

export type ApiEndpoint = (typeof API_ENDPOINTS)[number];
