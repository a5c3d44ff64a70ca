/**
 * The enumerated values of the API's objects, with what each means in our three locales: SPiD's
 * value sets (spid-tech-docs `types/*.edn`, `generated/sample-responses/describe-object-get.json`)
 * where the specification leaves them open. The import checks values against them, and
 * GET /api/2/describe/{object} reads them out (api/describe.ts).
 */
import type { Locale } from "../pages/locale";

type Labels = Readonly<Record<Locale, string>>;
/** Each value, as the API writes it, and its labels. */
export type ValueSet = ReadonlyMap<string, Labels>;

const labels = (en_US: string, nb_NO: string, sv_SE: string): Labels => ({ en_US, nb_NO, sv_SE });

/** Product types (spid-tech-docs `types/product-type.edn`). */
export const PRODUCT_TYPE = { default: 0, digitalContent: 1, subscription: 2, physical: 3, classifieds: 4 } as const;

/** Product statuses (spec "States and transitions"). */
export const PRODUCT_STATUS = { deleted: -1, notAvailable: 0, invisible: 1, unselectable: 2, available: 3 } as const;

/**
 * Digital content statuses: 3 available and -1 deleted as SPiD's responses show them (a grant,
 * and a revoked grant), and, on the product-status scale they follow, 0 expired and -2 blocked.
 */
export const DIGITAL_CONTENT_STATUS = { available: 3, expired: 0, deleted: -1, blocked: -2 } as const;

/**
 * The digital-content status filters of SPiD's lists (`/digitalcontents`, a user's products) and
 * the statuses each selects; null for every status.
 */
export const DIGITAL_CONTENT_STATUS_FILTERS: Readonly<Record<string, number[] | null>> = {
  active: [DIGITAL_CONTENT_STATUS.available],
  expired: [DIGITAL_CONTENT_STATUS.expired],
  all: null,
  none: null,
};

/** User statuses (spec "User object"): at or above `unverified` the user may sign in. */
export const USER_STATUS = { deleted: -3, blocked: -2, inactive: -1, unverified: 0, verified: 1 } as const;

const USER_STATUSES: ValueSet = new Map([
  ["-3", labels("User deleted", "Bruker slettet", "Användare raderad")],
  ["-2", labels("User blocked", "Bruker blokkert", "Användare blockerad")],
  ["-1", labels("User inactive", "Bruker inaktiv", "Användare inaktiv")],
  ["0", labels("User unverified", "Bruker ikke verifisert", "Användare ej verifierad")],
  ["1", labels("User verified", "Bruker verifisert", "Användare verifierad")],
]);

const USER_GENDER: ValueSet = new Map([
  ["male", labels("Male", "Mann", "Man")],
  ["female", labels("Female", "Kvinne", "Kvinna")],
  ["undisclosed", labels("Undisclosed", "Ikke oppgitt", "Ej angivet")],
  ["other", labels("Other", "Annet", "Annat")],
  ["withheld", labels("Withheld", "Holdt tilbake", "Undanhållet")],
]);

export const PRODUCT_TYPES: ValueSet = new Map([
  [String(PRODUCT_TYPE.default), labels("Default", "Standard", "Standard")],
  [String(PRODUCT_TYPE.digitalContent), labels("Digital content", "Digitalt innhold", "Digitalt innehåll")],
  [String(PRODUCT_TYPE.subscription), labels("Subscription", "Abonnement", "Prenumeration")],
  [String(PRODUCT_TYPE.physical), labels("Physical product", "Fysisk produkt", "Fysisk produkt")],
  [String(PRODUCT_TYPE.classifieds), labels("Classifieds", "Rubrikkannonser", "Radannonser")],
]);

const PRODUCT_STATUSES: ValueSet = new Map([
  ["-1", labels("Deleted", "Slettet", "Raderad")],
  ["0", labels("Not available", "Ikke tilgjengelig", "Ej tillgänglig")],
  ["1", labels("Available, but not visible", "Tilgjengelig, men ikke synlig", "Tillgänglig, men inte synlig")],
  ["2", labels("Available, but not selectable", "Tilgjengelig, men ikke valgbar", "Tillgänglig, men inte valbar")],
  ["3", labels("Available", "Tilgjengelig", "Tillgänglig")],
]);

const BUNDLE_TYPE: ValueSet = new Map([
  ["0", labels("Not a bundle", "Ikke en pakke", "Inte ett paket")],
  ["1", labels("Dynamic bundle", "Dynamisk pakke", "Dynamiskt paket")],
  ["2", labels("Onetime bundle", "Engangspakke", "Engångspaket")],
]);

/** Bits that add up to a product's `paymentOptions` (spec "Payment option value"). */
const PAYMENT_OPTIONS: ValueSet = new Map([
  ["1", labels("Card-wallet scheme", "Kortlommebok", "Kortplånbok")],
  ["2", labels("Credit card", "Kredittkort", "Kreditkort")],
  ["4", labels("SMS", "SMS", "SMS")],
  ["8", labels("Invoice (provider A)", "Faktura (leverandør A)", "Faktura (leverantör A)")],
  ["16", labels("Voucher", "Verdikode", "Värdekod")],
  ["32", labels("Invoice (provider B)", "Faktura (leverandør B)", "Faktura (leverantör B)")],
  ["64", labels("Mobile payment (provider B)", "Mobilbetaling (leverandør B)", "Mobilbetalning (leverantör B)")],
  ["128", labels("Wallet", "Lommebok", "Plånbok")],
]);

export const DIGITAL_CONTENT_STATUSES: ValueSet = new Map([
  [String(DIGITAL_CONTENT_STATUS.available), labels("Available", "Tilgjengelig", "Tillgänglig")],
  [String(DIGITAL_CONTENT_STATUS.expired), labels("Expired", "Utløpt", "Utgången")],
  [String(DIGITAL_CONTENT_STATUS.deleted), labels("Deleted", "Slettet", "Raderad")],
  [String(DIGITAL_CONTENT_STATUS.blocked), labels("Blocked", "Blokkert", "Blockerad")],
]);

/**
 * The objects GET /api/2/describe/{object} describes, under SPiD's names (`Content` is digital
 * content), each property's value set in SPiD's order.
 */
export const DESCRIBED_OBJECTS: ReadonlyMap<string, ReadonlyMap<string, ValueSet>> = new Map([
  [
    "User",
    new Map([
      ["gender", USER_GENDER],
      ["status", USER_STATUSES],
    ]),
  ],
  [
    "Product",
    new Map([
      ["type", PRODUCT_TYPES],
      ["status", PRODUCT_STATUSES],
      ["bundle", BUNDLE_TYPE],
      ["paymentOptions", PAYMENT_OPTIONS],
    ]),
  ],
  ["Content", new Map([["status", DIGITAL_CONTENT_STATUSES]])],
]);

/** The values of a set, as numbers (the value sets whose values are integers). */
export const numericValues = (set: ValueSet): number[] => [...set.keys()].map(Number);
