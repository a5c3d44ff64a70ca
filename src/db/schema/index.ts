/**
 * The D1 schema for the whole service, one file per area. Times are integer Unix seconds (UTC);
 * the API renders them as `YYYY-MM-DD HH:MM:SS`. Lists that are only ever read whole with their
 * owner (redirect URIs, resources, field settings) are JSON text columns; anything that is searched
 * has its own table. Every lookup, filter and sort an endpoint offers has an index here.
 */
export * from "./merchants-and-clients";
export * from "./users";
export * from "./commerce";
export * from "./mail";
export * from "./sign-in";
export * from "./devices";
export * from "./key-fingerprints";
export * from "./audit";
export * from "./idempotency";
export * from "./callbacks";
export * from "./second-factor";
export * from "./passkeys";
