/** What a sign-in leaves behind: live sign-in links, refresh tokens and browser sessions. */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { clients } from "./merchants-and-clients";
import { now } from "./now";
import type { RequestedClaims, SignInMethod } from "../../schemas/requested-claims";
import { users } from "./users";

export type { SignInMethod };

/**
 * The one live sign-in link per user (POST /api/2/signin, the login page's "e-mail me a link"):
 * its token's keyed hash. A new link replaces the row; using a link claims it for the confirming
 * browser (`token_hash` becomes the claim's hash, in one statement) and deletes it once the use is
 * answered, so a link works once and a replaced one never, whatever KV (which holds the link's
 * details) still shows, while the browser that claimed it may retry after a platform fault.
 */
export const signinRequests = sqliteTable(
  "signin_requests",
  {
    /**
     * Whom the link signs in: `user:<id>` for an address that has a user, whichever of its addresses
     * the link went to; `email:<address>` (as looked up) for one that has none.
     */
    subject: text("subject").primaryKey(),
    tokenHash: text("token_hash").notNull(),
    created: integer("created").notNull(),
    expires: integer("expires").notNull(),
    /** When the link's mail went out; null while it is being sent (oauth/signin-links.ts). */
    mailed: integer("mailed"),
  },
  /** The retention job's purge (jobs/retention.ts). */
  (t) => [index("signin_requests_expires_idx").on(t.expires)],
);

export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** HMAC-SHA256 of the opaque token under the data-protection key; the token itself is never stored. */
    tokenHash: text("token_hash").notNull(),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id, { onDelete: "cascade" }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    scope: text("scope").notNull().default(""),
    /** Every token rotated from one grant shares its family; reuse of a rotated one revokes them all. */
    family: text("family").notNull().default(""),
    created: integer("created").notNull().default(now),
    expires: integer("expires").notNull(),
    revoked: integer("revoked"),
    /** The token this one was rotated from (null for a grant's first): its successor in the family. */
    parentId: integer("parent_id"),
    /**
     * When this token was rotated by its own use: a row of a token issued before rotation in place
     * (a secret alone) is then revoked; a grant's row rotated in place is not, and `rotated` is when
     * its current token replaced the one `rotatedFrom` holds the hash of.
     */
    rotated: integer("rotated"),
    /**
     * Rotation in place (oauth/refresh-tokens.ts), for a grant whose `token_hash` is
     * `rt:<locator>`: the keyed hash of its current token, and that of the token whose use made the
     * current one (presenting it again within the grace window answers anew). Null for rows of
     * tokens issued before, which are found by `token_hash` itself.
     */
    secretHash: text("secret_hash"),
    rotatedFrom: text("rotated_from"),
    /**
     * What the grant's ID tokens say of the sign-in it came from (OpenID Connect): when it was,
     * the browser session's `sid`, and how (sessions.method). Null where the grant had none.
     */
    authTime: integer("auth_time"),
    sid: text("sid"),
    method: text("method").$type<SignInMethod>(),
    /** The user's claims the authorization request asked for by name (its `claims` parameter). */
    claims: text("claims", { mode: "json" }).$type<RequestedClaims>(),
  },
  (t) => [
    uniqueIndex("refresh_tokens_hash_idx").on(t.tokenHash),
    index("refresh_tokens_family_idx").on(t.family),
    index("refresh_tokens_user_client_idx").on(t.userId, t.clientId),
    index("refresh_tokens_client_idx").on(t.clientId),
    index("refresh_tokens_expires_idx").on(t.expires),
    /** A browser session's grants, whose clients hear of its end (back-channel logout). */
    index("refresh_tokens_sid_idx").on(t.sid),
  ],
);

/**
 * Browser sessions (the single sign-on of the browser flows): the cookie carries a random id and
 * its signature; only the id's keyed hash is stored, so a leaked table opens no session.
 * Revocable server-side (`revoked`), and ended at `expires` whatever the cookie says.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    idHash: text("id_hash").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The client the session was started through. */
    clientId: text("client_id").references(() => clients.id, { onDelete: "set null" }),
    created: integer("created").notNull(),
    expires: integer("expires").notNull(),
    revoked: integer("revoked"),
    /** How the user signed in: null for a webview session, which an exchange code started. */
    method: text("method").$type<SignInMethod>(),
  },
  (t) => [
    index("sessions_user_idx").on(t.userId),
    /** The retention job's purge (jobs/retention.ts). */
    index("sessions_expires_idx").on(t.expires),
  ],
);

/**
 * Users whose status became one that refuses sign-in (inactive, blocked, deleted) by a write that
 * did not sign them out itself: a bulk import, or anything else that sets `users.status`. A trigger
 * (migration 0032) adds the row with the status change, whatever wrote it; the sign-out job
 * (jobs/status-sign-outs.ts, every minute) ends the user's sessions and grants and deletes it. The
 * management API signs the user out in its request too, and the job's run after it ends what a
 * sign-in racing that sign-out started.
 * A row is its user's, as the user's own row is (no merchant): it moves with the user.
 */
export const pendingSignOuts = sqliteTable(
  "pending_sign_outs",
  {
    userId: integer("user_id")
      .primaryKey()
      .references(() => users.id, { onDelete: "cascade" }),
    /** When the status changed, Unix seconds: the job takes the oldest first. */
    requested: integer("requested").notNull(),
  },
  (t) => [index("pending_sign_outs_requested_idx").on(t.requested)],
);
