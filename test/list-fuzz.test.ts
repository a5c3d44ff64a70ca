/**
 * Generated query strings against every list endpoint: whatever arrives, the answer is a
 * documented 2xx or 4xx in the container, never a 5xx.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bearer, call, container, serverToken } from "./helpers/http";
import { createClient } from "./helpers/seed";

const KEYS = [
  "limit",
  "offset",
  "since",
  "until",
  "sort",
  "fields",
  "filters",
  "productId",
  "name",
  "code",
  "price",
  "parentProductId",
  "userId",
  "status",
  "id",
  "email",
  "emails",
  "uuid",
  "familyName",
  "givenName",
  "gender",
  "callback",
  "oauth_token",
];

const value = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.stringMatching(/^-?\d{1,20}$/),
  fc.constantFrom("now", "-3 days", "2024-02-30", "first day of January", "asc", "desc", "", ",", ",,a", "%", "%FF"),
  fc.constantFrom("merchant", "verified,deleted", "updated", "Hans*", "*", "ærø.åse@xn--bcher-kva.example", "a@b"),
  // Regular expressions, well-formed or not, with and without flags.
  fc
    .tuple(fc.string({ maxLength: 12 }), fc.constantFrom("", "i", "ms", "x", "ii"))
    .map(([pattern, flags]) => `/${pattern}/${flags}`),
  // Lists of any length up to past every limit, not just short ones.
  fc
    .integer({ min: 0, max: 120 })
    .chain((length) => fc.array(fc.integer({ min: -5, max: 1e6 }), { minLength: length, maxLength: length }))
    .map((list) => list.join(",")),
);

const key = fc.oneof(
  fc.constantFrom(...KEYS),
  fc.constantFrom(...KEYS).map((k) => `${k}[]`),
  fc.constantFrom("name", "price", "created", "published", "userId", "x", "", "[").map((k) => `sort[${k}]`),
  fc.string({ maxLength: 8 }),
);

const query = fc
  .array(fc.tuple(key, value), { maxLength: 6 })
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"));

describe.each(["/api/2/users", "/api/2/products", "/api/2/digitalcontents", "/api/2/mail"])(
  "%s with generated queries",
  (path) => {
    it("never answers 5xx", async () => {
      const token = await serverToken(await createClient({ rateLimit: { limit: 10_000, windowSeconds: 3600 } }));
      await fc.assert(
        fc.asyncProperty(query, async (q) => {
          const res = await call(`${path}?${q}`, { headers: bearer(token) });
          expect(res.status, q).toBeLessThan(500);
          const body = await container(res);
          expect(body.code).toBe(res.status);
        }),
        { numRuns: 150 },
      );
    }, 60_000);
  },
);
