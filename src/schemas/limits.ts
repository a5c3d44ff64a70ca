/**
 * The bounds of a client's and a user's values, as the import file (schemas/import-fields.ts) and
 * client registration (oauth/registration.ts) both hold them; no zod here, so the Worker's bundle
 * does not carry the import's schema library for them.
 */
/** Limits of the import's text and JSON values, in UTF-8 bytes, and of its lists (docs/operations.md "Importing data"). */
export const LIMITS = {
  /** Names, display names, titles, codes, mail templates and tokens, other short text. */
  text: 255,
  /** Short codes: contact types, phone numbers, postal codes. */
  code: 32,
  /** `fields` values, legacy user ids, mail event names, countries. */
  shortText: 64,
  email: 254,
  formattedAddress: 500,
  /** URLs of photos, products and purchases. */
  url: 2048,
  productDescription: 5000,
  redirectUri: 1024,
  /** Client secrets and signing secrets. */
  secret: 512,
  /** Stored only as a PBKDF2 hash. */
  password: 1024,
  /** Each of `css` and `termsCss`, serialized as JSON. */
  css: 4096,
  cssKey: 128,
  cssValue: 1024,
  redirectUris: 20,
  ipAllowList: 100,
  resources: 20,
  /** E-mails, phone numbers and third-party accounts of one user. */
  contacts: 50,
  addressTypes: 20,
  currentLocations: 10,
  connectedClients: 1000,
  mailEvents: 1000,
} as const;
