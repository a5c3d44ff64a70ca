/**
 * The import file (`npm run db:import -- file.json`): merchants, clients, users, products,
 * digitalContents and mails, each list optional. `"version": 2` files write product types and
 * digital-content statuses in SPiD's value sets (schemas/value-sets.ts); files without a version,
 * written before them, are read in the earlier sets and converted (LEGACY_VALUES). Passwords and client secrets arrive in plain
 * text and are hashed on import. Every rule the API relies on is checked here, before anything
 * is written. When the file has a list of some kind (say clients), references to that kind must
 * resolve within the file; when it has none, they may name rows already in the database, and the
 * database's foreign keys check them inside the same all-or-nothing batch.
 */
import * as z from "zod";
import { isLoopbackUri, redirectUriProblem } from "../oauth/redirect-uri";
import { MAX_ACCESS_TOKEN_LIFETIME } from "../oauth/lifetimes";
import { SIGNING_ALGORITHMS } from "../oauth/signing-algorithms";
import { API_ENDPOINTS } from "./api-endpoints";
import { CLIENT_FIELDS } from "./client-fields";
import { GRANT_TYPES, PUBLIC_CLIENTS_ROTATE } from "./client-settings";
import {
  serverEndpointProblem,
  clientScopeProblem,
  pageUriProblem,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from "./client-metadata";
import { birthday, css, datetime, email, flag, integerId, oneOf, record, text, uuid } from "./import-fields";
import { LIMITS } from "./limits";
import {
  DIGITAL_CONTENT_STATUS,
  DIGITAL_CONTENT_STATUSES,
  numericValues,
  PRODUCT_TYPE,
  PRODUCT_TYPES,
} from "./value-sets";

export const USER_STATUSES = [1, 0, -1, -2, -3] as const;
export const PRODUCT_STATUSES = [-1, 0, 1, 2, 3] as const;
export const BUNDLE_TYPES = [0, 1, 2] as const;

/** The current value sets (`"version": 2`). */
const VALUES = {
  productType: numericValues(PRODUCT_TYPES),
  digitalContentStatus: numericValues(DIGITAL_CONTENT_STATUSES),
};
/**
 * The value sets of files without a version, and what each value is now: product types 1 product,
 * 2 subscription, 3 digital content; digital-content statuses 1 active, 0 expired, -1 deleted,
 * -2 blocked.
 */
const LEGACY_VALUES = {
  productType: new Map([
    [1, PRODUCT_TYPE.default],
    [2, PRODUCT_TYPE.subscription],
    [3, PRODUCT_TYPE.digitalContent],
  ]),
  digitalContentStatus: new Map([
    [1, DIGITAL_CONTENT_STATUS.available],
    [0, DIGITAL_CONTENT_STATUS.expired],
    [-1, DIGITAL_CONTENT_STATUS.deleted],
    [-2, DIGITAL_CONTENT_STATUS.blocked],
  ]),
};
export const IMPORT_FORMAT_VERSION = 2;

/** Loopback URIs pass here, and only a public client's (checked with the client). */
const redirectUri = text(LIMITS.redirectUri).superRefine((uri, ctx) => {
  const problem = redirectUriProblem(uri, { loopback: true });
  if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
});

/** A text that `problem` finds nothing wrong with. */
const checked = (max: number, problem: (value: string) => string | null) =>
  text(max).superRefine((value, ctx) => {
    const found = problem(value);
    if (found !== null) ctx.addIssue({ code: "custom", message: found });
  });

const clientFieldSetting = z.union([z.boolean(), text(LIMITS.shortText)]).optional();

const clientId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "client ids are 8-64 letters, digits, - or _");

const merchant = z.strictObject({ merchantId: integerId, name: text() });

const client = z
  .strictObject({
    id: clientId,
    /** Optional for a public client, which authenticates with none. */
    secret: text(LIMITS.secret).min(16, "client secrets must be at least 16 characters").optional(),
    signingSecret: text(LIMITS.secret).min(16, "signing secrets must be at least 16 characters").optional(),
    name: text(),
    alias: text().default(""),
    domain: text().default(""),
    merchantId: integerId,
    redirectUris: z.array(redirectUri).max(LIMITS.redirectUris).default([]),
    defaultRedirectUri: redirectUri.nullable().default(null),
    fields: z.strictObject(Object.fromEntries(CLIENT_FIELDS.map((name) => [name, clientFieldSetting]))).default({}),
    css: css.default({}),
    termsCss: css.default({}),
    grantTypes: z
      .array(z.enum(GRANT_TYPES))
      .refine((types) => new Set(types).size === types.length, "each grant type at most once")
      .default([]),
    accessTokenLifetime: z
      .union([z.number(), z.string().regex(/^\d+$/).transform(Number)])
      .pipe(z.number().int().min(60).max(MAX_ACCESS_TOKEN_LIFETIME))
      .default(604800),
    autoApprove: flag.default(false),
    enableSso: flag.default(false),
    requireSecondFactor: flag.default(false),
    /** A client that cannot keep its secret (a native app): PKCE required, no secret at /oauth/token. */
    public: flag.default(false),
    unregisteredPayments: flag.default(false),
    universalDataAccess: flag.default(false),
    admin: flag.default(false),
    ipWhitelist: z
      .array(z.union([z.ipv4(), z.ipv6()]))
      .max(LIMITS.ipAllowList)
      .default([]),
    rateLimit: z
      .strictObject({
        limit: z.number().int().min(1).max(10_000_000),
        windowSeconds: z.number().int().min(1).max(86_400),
      })
      .nullable()
      .default(null),
    jwt: flag.default(false),
    resources: z
      .array(z.string().regex(/^[a-z0-9.-]{1,253}(?::\d{1,5})?$/i, "resources are domain names"))
      .max(LIMITS.resources)
      .default([]),
    /** The /api/2 endpoints the client may call; absent or null for every one. */
    apiEndpoints: z
      .array(z.enum(API_ENDPOINTS))
      .refine((endpoints) => new Set(endpoints).size === endpoints.length, "each endpoint at most once")
      .nullable()
      .default(null),
    /** OpenID Connect's client metadata: null for RS256 ID tokens and EdDSA access tokens. */
    idTokenSignedResponseAlg: z.enum(SIGNING_ALGORITHMS).nullable().default(null),
    accessTokenSignedResponseAlg: z.enum(SIGNING_ALGORITHMS).nullable().default(null),
    /** Registration metadata (RFC 7591), as POST /oauth/register takes it (schemas/client-metadata.ts). */
    logoUri: checked(LIMITS.url, pageUriProblem).nullable().default(null),
    clientUri: checked(LIMITS.url, pageUriProblem).nullable().default(null),
    postLogoutRedirectUris: z.array(redirectUri).max(LIMITS.redirectUris).default([]),
    backchannelLogoutUri: checked(LIMITS.url, (uri) => serverEndpointProblem(uri, { loopback: true }))
      .nullable()
      .default(null),
    backchannelLogoutSessionRequired: flag.default(false),
    refreshTokenRotation: flag.default(true),
    /** Where the client is told of changes to its users (docs/callbacks.md). */
    callbackUrl: checked(LIMITS.url, (uri) => serverEndpointProblem(uri, { loopback: true }))
      .nullable()
      .default(null),
    tokenEndpointAuthMethod: z.enum(TOKEN_ENDPOINT_AUTH_METHODS).nullable().default(null),
    scope: checked(LIMITS.text, clientScopeProblem).nullable().default(null),
  })
  .refine((c) => c.public || c.secret !== undefined, {
    message: "a confidential client needs a secret (only a public client has none)",
    path: ["secret"],
  })
  .refine((c) => c.defaultRedirectUri === null || c.redirectUris.includes(c.defaultRedirectUri), {
    message: "defaultRedirectUri must be one of redirectUris",
    path: ["defaultRedirectUri"],
  })
  .refine((c) => c.public || ![...c.redirectUris, ...c.postLogoutRedirectUris].some(isLoopbackUri), {
    message: "loopback redirect URIs (http on 127.0.0.1 or [::1]) are for public clients only (RFC 8252)",
    path: ["redirectUris"],
  })
  .refine((c) => (c.tokenEndpointAuthMethod === "none") === c.public || c.tokenEndpointAuthMethod === null, {
    message: "tokenEndpointAuthMethod none is a public client's, and a public client's is none",
    path: ["tokenEndpointAuthMethod"],
  })
  .refine((c) => c.refreshTokenRotation || !c.public, {
    message: PUBLIC_CLIENTS_ROTATE,
    path: ["refreshTokenRotation"],
  });

const contact = z.strictObject({
  value: text(LIMITS.email).min(1),
  type: text(LIMITS.code).default("other"),
  primary: z.boolean().default(false),
  verified: z.boolean().default(false),
});

const address = z.strictObject({
  formatted: text(LIMITS.formattedAddress).optional(),
  streetAddress: text().optional(),
  postalCode: text(LIMITS.code).optional(),
  locality: text().optional(),
  region: text().optional(),
  country: text(LIMITS.shortText).optional(),
});

const user = z.strictObject({
  userId: integerId.refine((id) => id > 0, "user ids start at 1"),
  uuid,
  id: text(LIMITS.shortText).optional(),
  password: text(LIMITS.password).min(8).optional(),
  status: oneOf(USER_STATUSES, "status"),
  email: email.optional(),
  emailVerified: datetime.optional(),
  emails: z
    .array(contact.extend({ value: email }))
    .max(LIMITS.contacts)
    .default([]),
  phoneNumber: text(LIMITS.code).optional(),
  phoneNumberVerified: datetime.optional(),
  phoneNumbers: z
    .array(contact.extend({ type: text(LIMITS.code).default("mobile") }))
    .max(LIMITS.contacts)
    .default([]),
  name: z
    .strictObject({ givenName: text().optional(), familyName: text().optional(), formatted: text().optional() })
    .default({}),
  displayName: text().optional(),
  preferredUsername: text().optional(),
  url: text(LIMITS.url).optional(),
  photo: text(LIMITS.url).optional(),
  gender: z.enum(["undisclosed", "female", "male", "other", "withheld"]).default("undisclosed"),
  birthday: birthday.default("0000-00-00"),
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
  addresses: record(
    z
      .string()
      .regex(/^[A-Za-z]{1,32}$/, "address types are words such as home or delivery")
      .refine((type) => type !== "current", "use currentLocation for the current location"),
    address,
  )
    .refine(
      (addresses) => Object.keys(addresses).length <= LIMITS.addressTypes,
      `at most ${LIMITS.addressTypes} address types`,
    )
    .default({}),
  currentLocation: z.array(address).max(LIMITS.currentLocations).default([]),
  accounts: z
    .array(z.strictObject({ domain: text(), userId: text().optional(), username: text().optional() }))
    .max(LIMITS.contacts)
    .default([]),
  clients: z.array(clientId).max(LIMITS.connectedClients).default([]),
});

const product = z.strictObject({
  productId: integerId,
  parentProductId: integerId.optional(),
  clientId,
  /** Checked against the file's version's value set (below). */
  type: z.number().int(),
  bundle: oneOf(BUNDLE_TYPES, "bundle").default(0),
  code: text().optional(),
  name: text(),
  description: text(LIMITS.productDescription).optional(),
  url: text(LIMITS.url).optional(),
  /** Minor currency units, as a number or, as the API writes a price, an integer string ("9900"). */
  price: integerId,
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
  subscriptionRenewPrice: integerId.optional(),
  subscriptionRenewPeriod: z.number().int().nonnegative().optional(),
  subscriptionAutoRenew: flag.default(false),
  subscriptionAutoRenewLockPeriod: z.number().int().nonnegative().optional(),
  subscriptionAutoRenewDisabled: flag.default(false),
  subscriptionGracePeriod: z.number().int().nonnegative().optional(),
  subscriptionEmailReceiptLimit: z.number().int().nonnegative().optional(),
  subscriptionFinalEndDate: datetime.optional(),
  allowMultiSales: flag.default(false),
  status: oneOf(PRODUCT_STATUSES, "status"),
  purchaseUri: text(LIMITS.url).optional(),
  changedBy: integerId.optional(),
  createdBy: integerId.optional(),
  created: datetime,
  /** `changed` in the API; `updated` is accepted as its other name. */
  changed: datetime.optional(),
  updated: datetime.optional(),
});

const digitalContent = z.strictObject({
  userProductId: integerId,
  productId: integerId,
  parentProductId: integerId.optional(),
  userId: integerId,
  clientId,
  orderId: integerId.optional(),
  /** Checked against the file's version's value set (below). */
  status: z.number().int(),
  count: z.number().int().nonnegative().default(1),
  bundleId: integerId.optional(),
  statusMsg: text().optional(),
  created: datetime,
  updated: datetime,
});

const mail = z.strictObject({
  userId: integerId,
  /** The client the mail was sent for: only it sees the mail (GET /api/2/mail). */
  clientId: clientId.optional(),
  template: text(),
  senderName: text().optional(),
  senderEmail: email,
  userName: text().optional(),
  userEmail: email,
  created: datetime,
  token: text().min(1),
  events: z
    .array(z.strictObject({ event: text(LIMITS.shortText), timestamp: datetime }))
    .max(LIMITS.mailEvents)
    .default([]),
});

export const importFileSchema = z
  .strictObject({
    /** 2: SPiD's value sets; absent: the earlier ones, converted on import. */
    version: z.literal(IMPORT_FORMAT_VERSION).optional(),
    merchants: z.array(merchant).default([]),
    clients: z.array(client).default([]),
    users: z.array(user).default([]),
    products: z.array(product).default([]),
    digitalContents: z.array(digitalContent).default([]),
    mails: z.array(mail).default([]),
  })
  .superRefine((file, ctx) => {
    const current = file.version === IMPORT_FORMAT_VERSION;
    const productTypes = current ? VALUES.productType : [...LEGACY_VALUES.productType.keys()];
    const contentStatuses = current ? VALUES.digitalContentStatus : [...LEGACY_VALUES.digitalContentStatus.keys()];
    const within = (values: number[], value: number, path: (string | number)[]) => {
      if (!values.includes(value))
        ctx.addIssue({ code: "custom", message: `${path.at(-1)} must be one of ${values.join(", ")}`, path });
    };
    file.products.forEach((p, i) => within(productTypes, p.type, ["products", i, "type"]));
    file.digitalContents.forEach((d, i) => within(contentStatuses, d.status, ["digitalContents", i, "status"]));
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
    file.mails.forEach((m, i) => {
      inFile(userIds, m.userId, file.users.length > 0, ["mails", i, "userId"], "user");
      if (m.clientId !== undefined) {
        inFile(clientIds, m.clientId, file.clients.length > 0, ["mails", i, "clientId"], "client");
      }
    });
  })
  .transform((file) => (file.version === IMPORT_FORMAT_VERSION ? file : inCurrentValues(file)));

/**
 * A file without a version, its product types and digital-content statuses in the current sets,
 * and marked as a current file, so that reading it again changes nothing more.
 */
function inCurrentValues<
  F extends { version?: number; products: { type: number }[]; digitalContents: { status: number }[] },
>(file: F): F {
  return {
    ...file,
    version: IMPORT_FORMAT_VERSION,
    products: file.products.map((p) => ({ ...p, type: LEGACY_VALUES.productType.get(p.type)! })),
    digitalContents: file.digitalContents.map((d) => ({
      ...d,
      status: LEGACY_VALUES.digitalContentStatus.get(d.status)!,
    })),
  };
}

export type ImportFile = z.infer<typeof importFileSchema>;

function unique<T>(ctx: z.RefinementCtx, list: T[], name: string, field: string, key: (item: T) => unknown) {
  const seen = new Set<unknown>();
  list.forEach((item, i) => {
    const k = key(item);
    if (seen.has(k)) ctx.addIssue({ code: "custom", message: `duplicate ${field}`, path: [name, i, field] });
    seen.add(k);
  });
}

/**
 * One line per problem, each naming the path in the file, e.g. `users[2].email: Invalid email
 * address`; an unknown key is named as part of the path (`clients[0].ipAllowList: Unrecognized key`).
 */
export function describeImportErrors(error: z.ZodError): string[] {
  return error.issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => `${describePath([...issue.path, key])}: Unrecognized key`)
      : [`${describePath(issue.path)}: ${issue.message}`],
  );
}

function describePath(path: PropertyKey[]): string {
  if (path.length === 0) return "(file)";
  return path
    .map((p, i) => {
      if (typeof p === "number") return `[${p}]`;
      const name = String(p);
      if (!/^[A-Za-z_$][\w$]*$/.test(name)) return `[${JSON.stringify(name)}]`;
      return i === 0 ? name : `.${name}`;
    })
    .join("");
}
