/**
 * The import file (`npm run db:import -- file.json`): merchants, clients, users, products,
 * digitalContents and mails, each list optional. Passwords and client secrets arrive in plain
 * text and are hashed on import. Every rule the API relies on is checked here, before anything
 * is written. When the file has a list of some kind (say clients), references to that kind must
 * resolve within the file; when it has none, they may name rows already in the database, and the
 * database's foreign keys check them inside the same all-or-nothing batch.
 */
import * as z from "zod";

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/;

/** 9999-12-31 23:59:59 UTC: the last second a `YYYY-MM-DD HH:MM:SS` can show. */
const LAST_DATETIME = 253_402_300_799;

/** `YYYY-MM-DD HH:MM:SS` (UTC) or Unix seconds, to Unix seconds. */
const datetime = z.union([
  z.number().int().nonnegative().max(LAST_DATETIME, "expected Unix seconds up to year 9999"),
  z
    .string()
    .regex(DATETIME, "expected YYYY-MM-DD HH:MM:SS")
    .transform((text, ctx) => {
      const seconds = Date.parse(`${text.replace(" ", "T")}Z`) / 1000;
      if (!Number.isFinite(seconds)) {
        ctx.addIssue({ code: "custom", message: "not a real date and time" });
        return z.NEVER;
      }
      return seconds;
    }),
]);

/** Integers that the API serializes as strings may be given either way. */
const integerId = z.union([
  z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number),
]);
const flag = z.union([
  z.boolean(),
  z.enum(["0", "1"]).transform((v) => v === "1"),
  z.literal(0).transform(() => false),
  z.literal(1).transform(() => true),
]);
const text = (max = 255) => z.string().max(max);
const email = z
  .email()
  .max(254)
  .transform((v) => v.toLowerCase());
const oneOf = <T extends number>(values: readonly T[], what: string) =>
  z
    .number()
    .int()
    .refine((v): v is T => (values as readonly number[]).includes(v), `${what} must be one of ${values.join(", ")}`);

export const USER_STATUSES = [1, 0, -1, -2, -3] as const;
export const PRODUCT_STATUSES = [-1, 0, 1, 2, 3] as const;
export const PRODUCT_TYPES = [1, 2, 3] as const;
export const BUNDLE_TYPES = [0, 1, 2] as const;
export const DIGITAL_CONTENT_STATUSES = [1, 0, -1, -2] as const;
export const GRANT_TYPES = [
  "authorization_code",
  "password",
  "assertion",
  "refresh_token",
  "client_credentials",
  "urn:ietf:params:oauth:grant-type:jwt-bearer",
] as const;

/** Spec "Client requirements": https, no embedded redirect URI, none of the listed characters. */
const FORBIDDEN_IN_REDIRECT = /[\s!()[\]{};',<>«»“”‘’@"`\\]/;
/** A scheme (`https:`, `javascript:`) or a network path (`//`, `\\`, `/\`) at the start of a value. */
const URI_START = /^(?:[a-z][a-z0-9+.-]*:|[/\\]{2})/i;

/** Percent-decoded until it no longer changes, without the tabs and newlines browsers drop. */
function fullyDecoded(text: string): string {
  let decoded = text;
  for (let round = 0; round < 4; round++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      break;
    }
    if (next === decoded) break;
    decoded = next;
  }
  return decoded.replace(/[\t\n\r]/g, "");
}

/**
 * True when a redirect URI carries another address a browser could be sent on to: a query key or
 * value that, decoded, starts with a scheme or a network path, or a path that holds `://` or
 * starts with `//`. Encoded and double-encoded forms count as what they decode to.
 */
function embedsAnotherUri(uri: string): boolean {
  const url = new URL(uri);
  const path = fullyDecoded(url.pathname);
  if (path.includes("://") || /^[/\\]{2}/.test(path)) return true;
  return [...url.searchParams].some(([key, value]) => [key, value].some((part) => URI_START.test(fullyDecoded(part))));
}

const redirectUri = z
  .string()
  .max(2048)
  .refine((uri) => URL.canParse(uri) && new URL(uri).protocol === "https:", "redirect URIs must be absolute https URLs")
  .refine(
    (uri) => !FORBIDDEN_IN_REDIRECT.test(uri),
    "redirect URIs must not contain whitespace, a backslash or ! ( ) [ ] { } ; ' , < > « » “ ” ‘ ’ @ \" `",
  )
  .refine((uri) => !uri.includes("#"), "redirect URIs must not have a fragment (RFC 6749 §3.1.2)")
  .refine((uri) => !URL.canParse(uri) || !embedsAnotherUri(uri), "redirect URIs must not embed another URI");

const merchant = z.object({ merchantId: integerId, name: text() });

const client = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "client ids are 8-64 letters, digits, - or _"),
    secret: z.string().min(16, "client secrets must be at least 16 characters").max(512),
    signingSecret: z.string().min(16).max(512).optional(),
    name: text(),
    alias: text().default(""),
    domain: text().default(""),
    merchantId: integerId,
    redirectUris: z.array(redirectUri).max(100).default([]),
    defaultRedirectUri: redirectUri.nullable().default(null),
    fields: z.record(z.string().max(64), z.union([z.boolean(), text(64)])).default({}),
    css: z.record(z.string(), z.unknown()).default({}),
    termsCss: z.record(z.string(), z.unknown()).default({}),
    grantTypes: z.array(z.enum(GRANT_TYPES)).default([]),
    accessTokenLifetime: z
      .union([z.number(), z.string().regex(/^\d+$/).transform(Number)])
      .pipe(z.number().int().min(60).max(31_536_000))
      .default(604800),
    autoApprove: flag.default(false),
    enableSso: flag.default(false),
    unregisteredPayments: flag.default(false),
    universalDataAccess: flag.default(false),
    admin: flag.default(false),
    ipWhitelist: z
      .array(z.union([z.ipv4(), z.ipv6()]))
      .max(100)
      .default([]),
    rateLimit: z
      .object({ limit: z.number().int().min(1).max(10_000_000), windowSeconds: z.number().int().min(1).max(86_400) })
      .nullable()
      .default(null),
    jwt: flag.default(false),
    resources: z
      .array(z.string().regex(/^[a-z0-9.-]+(?::\d+)?$/i, "resources are domain names"))
      .max(50)
      .default([]),
  })
  .refine((c) => c.defaultRedirectUri === null || c.redirectUris.includes(c.defaultRedirectUri), {
    message: "defaultRedirectUri must be one of redirectUris",
    path: ["defaultRedirectUri"],
  });

const contact = z.object({
  value: z.string().min(1).max(254),
  type: text(32).default("other"),
  primary: z.boolean().default(false),
  verified: z.boolean().default(false),
});

const address = z.object({
  formatted: text(500).optional(),
  streetAddress: text().optional(),
  postalCode: text(32).optional(),
  locality: text().optional(),
  region: text().optional(),
  country: text(64).optional(),
});

const user = z.object({
  userId: integerId,
  uuid: z.uuid(),
  id: text(64).optional(),
  password: z.string().min(8).max(1024).optional(),
  status: oneOf(USER_STATUSES, "status"),
  email: email.optional(),
  emailVerified: datetime.optional(),
  emails: z
    .array(contact.extend({ value: email }))
    .max(50)
    .default([]),
  phoneNumber: text(32).optional(),
  phoneNumberVerified: datetime.optional(),
  phoneNumbers: z
    .array(contact.extend({ type: text(32).default("mobile") }))
    .max(50)
    .default([]),
  name: z
    .object({ givenName: text().optional(), familyName: text().optional(), formatted: text().optional() })
    .default({}),
  displayName: text().optional(),
  preferredUsername: text().optional(),
  url: text(2048).optional(),
  photo: text(2048).optional(),
  gender: z.enum(["undisclosed", "female", "male", "other", "withheld"]).default("undisclosed"),
  birthday: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, "expected YYYY-MM-DD (year 0000 when unknown)")
    .default("0000-00-00"),
  locale: z
    .string()
    .regex(/^[a-z]{2,3}_[A-Z]{2}$/, "expected a locale such as nb_NO")
    .optional(),
  utcOffset: z
    .string()
    .regex(/^[+-]\d{2}:\d{2}$/, "expected an offset such as +01:00")
    .optional(),
  verified: datetime.optional(),
  tracking: z.boolean().default(false),
  published: datetime,
  updated: datetime,
  lastLoggedIn: datetime.optional(),
  lastAuthenticated: datetime.optional(),
  imported: datetime.optional(),
  migrated: datetime.optional(),
  addresses: z
    .record(
      z
        .string()
        .regex(/^[A-Za-z]{1,32}$/, "address types are words such as home or delivery")
        .refine((type) => type !== "current", "use currentLocation for the current location"),
      address,
    )
    .default({}),
  currentLocation: z.array(address).max(10).default([]),
  accounts: z
    .array(z.object({ domain: text(), userId: text().optional(), username: text().optional() }))
    .max(50)
    .default([]),
  clients: z.array(z.string()).max(1000).default([]),
});

const product = z.object({
  productId: integerId,
  parentProductId: integerId.optional(),
  clientId: z.string(),
  type: oneOf(PRODUCT_TYPES, "type"),
  bundle: oneOf(BUNDLE_TYPES, "bundle").default(0),
  code: text().optional(),
  name: text(),
  description: text(5000).optional(),
  url: text(2048).optional(),
  price: z.number().int().nonnegative(),
  vat: z.number().int().min(0).max(10000),
  currency: z.string().regex(/^[A-Z]{3}$/, "expected an ISO 4217 code such as NOK"),
  paymentOptions: z.number().int().min(0).max(255).default(2),
  quantityLimit: z.number().int().nonnegative().optional(),
  quantityCount: z.number().int().nonnegative().default(0),
  saleStart: datetime.optional(),
  saleStop: datetime.optional(),
  availableStart: datetime.optional(),
  availableStop: datetime.optional(),
  subscriptionPeriod: z.number().int().nonnegative().optional(),
  subscriptionRenewPrice: z.number().int().nonnegative().optional(),
  subscriptionRenewPeriod: z.number().int().nonnegative().optional(),
  subscriptionAutoRenew: flag.default(false),
  subscriptionAutoRenewLockPeriod: z.number().int().nonnegative().optional(),
  subscriptionAutoRenewDisabled: flag.default(false),
  subscriptionGracePeriod: z.number().int().nonnegative().optional(),
  subscriptionEmailReceiptLimit: z.number().int().nonnegative().optional(),
  subscriptionFinalEndDate: datetime.optional(),
  allowMultiSales: flag.default(false),
  status: oneOf(PRODUCT_STATUSES, "status"),
  purchaseUri: text(2048).optional(),
  changedBy: integerId.optional(),
  createdBy: integerId.optional(),
  created: datetime,
  /** `changed` in the API; `updated` is accepted as its other name. */
  changed: datetime.optional(),
  updated: datetime.optional(),
});

const digitalContent = z.object({
  userProductId: integerId,
  productId: integerId,
  parentProductId: integerId.optional(),
  userId: integerId,
  clientId: z.string(),
  orderId: integerId.optional(),
  status: oneOf(DIGITAL_CONTENT_STATUSES, "status"),
  count: z.number().int().nonnegative().default(1),
  bundleId: integerId.optional(),
  statusMsg: text().optional(),
  created: datetime,
  updated: datetime,
});

const mail = z.object({
  userId: integerId,
  template: text(),
  senderName: text().optional(),
  senderEmail: email,
  userName: text().optional(),
  userEmail: email,
  created: datetime,
  token: z.string().min(1).max(255),
  events: z
    .array(z.object({ event: text(64), timestamp: datetime }))
    .max(1000)
    .default([]),
});

export const importFileSchema = z
  .object({
    merchants: z.array(merchant).default([]),
    clients: z.array(client).default([]),
    users: z.array(user).default([]),
    products: z.array(product).default([]),
    digitalContents: z.array(digitalContent).default([]),
    mails: z.array(mail).default([]),
  })
  .strict()
  .superRefine((file, ctx) => {
    unique(ctx, file.merchants, "merchants", "merchantId", (m) => m.merchantId);
    unique(ctx, file.clients, "clients", "id", (c) => c.id);
    unique(ctx, file.users, "users", "userId", (u) => u.userId);
    unique(ctx, file.users, "users", "uuid", (u) => u.uuid);
    unique(ctx, file.products, "products", "productId", (p) => p.productId);
    unique(ctx, file.digitalContents, "digitalContents", "userProductId", (d) => d.userProductId);
    unique(ctx, file.mails, "mails", "token", (m) => m.token);
    const owners = new Map<string, number>();
    file.users.forEach((u, i) => {
      for (const e of new Set([...(u.email ? [u.email] : []), ...u.emails.map((x) => x.value)])) {
        const owner = owners.get(e);
        if (owner !== undefined && owner !== i) {
          ctx.addIssue({
            code: "custom",
            message: "this e-mail address already belongs to another user in the file",
            path: ["users", i, "emails"],
          });
        }
        owners.set(e, i);
      }
    });

    const merchantIds = new Set(file.merchants.map((m) => m.merchantId));
    const clientIds = new Set(file.clients.map((c) => c.id));
    const productIds = new Set(file.products.map((p) => p.productId));
    const userIds = new Set(file.users.map((u) => u.userId));
    const inFile = <T>(ids: Set<T>, id: T, listed: boolean, path: (string | number)[], what: string) => {
      if (listed && !ids.has(id))
        ctx.addIssue({ code: "custom", message: `no ${what} with this id in the file`, path });
    };
    file.clients.forEach((c, i) =>
      inFile(merchantIds, c.merchantId, file.merchants.length > 0, ["clients", i, "merchantId"], "merchant"),
    );
    file.users.forEach((u, i) =>
      u.clients.forEach((id, j) =>
        inFile(clientIds, id, file.clients.length > 0, ["users", i, "clients", j], "client"),
      ),
    );
    file.products.forEach((p, i) => {
      inFile(clientIds, p.clientId, file.clients.length > 0, ["products", i, "clientId"], "client");
      if (p.parentProductId !== undefined)
        inFile(productIds, p.parentProductId, true, ["products", i, "parentProductId"], "product");
    });
    file.digitalContents.forEach((d, i) => {
      inFile(productIds, d.productId, file.products.length > 0, ["digitalContents", i, "productId"], "product");
      inFile(userIds, d.userId, file.users.length > 0, ["digitalContents", i, "userId"], "user");
      inFile(clientIds, d.clientId, file.clients.length > 0, ["digitalContents", i, "clientId"], "client");
    });
    file.mails.forEach((m, i) => inFile(userIds, m.userId, file.users.length > 0, ["mails", i, "userId"], "user"));
  });

export type ImportFile = z.infer<typeof importFileSchema>;

function unique<T>(ctx: z.RefinementCtx, list: T[], name: string, field: string, key: (item: T) => unknown) {
  const seen = new Set<unknown>();
  list.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k)) ctx.addIssue({ code: "custom", message: `duplicate ${field}`, path: [name, i, field] });
    seen.add(k);
  });
}

/** One line per problem, each naming the path in the file, e.g. `users[2].email: Invalid email address`. */
export function describeImportErrors(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path
      .map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
      .join("");
    return `${path || "(file)"}: ${issue.message}`;
  });
}
