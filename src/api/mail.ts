/**
 * GET /api/2/mail: a user's mail history with its events. Server token. The user is named by
 * `id` (uuid or userId, never the deprecated legacy id) or `email` (the address, Base64-encoded);
 * only users connected to the calling client are shown, and only the mails sent for the calling
 * client (docs/api.md "Mail").
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { findVisibleMailOwner, listMails, type MailOwner } from "../db/queries/mails";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { decodeBase64Utf8 } from "../http/encoding";
import { parseUserKey } from "../http/user-key";
import { requireToken } from "../middleware/auth";
import { canonicalEmailAddress } from "../schemas/email-address";
import { mailSchema } from "../schemas/responses/mail";
import { mailView } from "./views/mail";

/** The most recent mails shown, each with all of its events. */
const MAX_MAILS = 100;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

const noValidParameter = () => new ApiError(400, "invalid_request", "No valid parameter provided");

/** The address in `email`, Base64 in either alphabet, padded or not; null when it is no e-mail. */
function decodeEmail(sent: string): string | null {
  // A `+` sent unescaped in a query string arrives as a space.
  const encoded = sent.replace(/ /g, "+");
  if (encoded.length > 512 || !BASE64.test(encoded)) return null;
  try {
    return canonicalEmailAddress(decodeBase64Utf8(encoded.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "")));
  } catch {
    return null;
  }
}

export const mailRoutes = new Hono<AppEnv>().get(
  "/mail",
  describeRoute({
    name: "List a user's mail",
    controller: "api/mail#index",
    parameters: [
      { name: "id", in: "query", description: "The user's uuid or userId", schema: { type: "string" } },
      {
        name: "email",
        in: "query",
        description: "Any of the user's e-mail addresses, Base64",
        schema: { type: "string" },
      },
    ],
    success: { data: z.array(mailSchema), collection: true },
  }),
  requireToken("mail", "server"),
  async (c) => {
    const ids = c.req.queries("id") ?? [];
    const emails = c.req.queries("email") ?? [];
    if (ids.length > 1 || emails.length > 1) throw noValidParameter();
    const [id] = ids;
    const [encodedEmail] = emails;
    const byId = id === undefined ? undefined : parseUserKey(id);
    // An id given but unreadable is never passed over for the e-mail.
    if ((id !== undefined && byId === undefined) || (id === undefined && encodedEmail === undefined)) {
      throw noValidParameter();
    }
    const owner: MailOwner = { ...byId };
    if (encodedEmail !== undefined) {
      const email = decodeEmail(encodedEmail);
      if (email === null) {
        throw new ApiError(400, "invalid_request", "Email parameter did not properly base64 decode into a valid email");
      }
      owner.email = email;
    }
    const db = c.get("db")();
    const userId = await findVisibleMailOwner(db, c.get("caller").clientId, owner);
    const { clientId } = c.get("caller");
    const found = userId === undefined ? [] : await listMails(db, userId, MAX_MAILS, { clientId });
    return respond(c, {
      object: "Mails",
      type: "collection",
      data: found.map(mailView),
      meta: { count: found.length, offset: 0 },
      params: { options: { limit: MAX_MAILS }, where: owner },
    });
  },
);
