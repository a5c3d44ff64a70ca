/**
 * The Product fields a client sets through the API (SPiD's `POST /product` and
 * `POST /product/{id}`): form fields as SPiD names them, values as the import takes them
 * (schemas/import.ts, "version": 2): prices in minor units, VAT × 10000, times as Unix seconds or
 * `YYYY-MM-DD HH:MM:SS`, flags `1`/`0`.
 */
import * as z from "zod/mini";
import { clearableInteger, flag, integer, reservedFields, text, time, webAddress } from "./form-fields";
import { LIMITS } from "./limits";
import { PRODUCT_STATUS, PRODUCT_TYPE } from "./value-sets";

const MAX_INTEGER = Number.MAX_SAFE_INTEGER;
const oneOf = (values: Record<string, number>) =>
  z.pipe(
    integer(-1_000, 1_000),
    z.number().check(z.refine((value) => Object.values(values).includes(value), "not one of the value set")),
  );
const period = z.optional(clearableInteger(0, MAX_INTEGER));

export const productFields = {
  code: z.optional(text()),
  name: z.optional(z.pipe(text(), z.string())),
  description: z.optional(text(LIMITS.productDescription)),
  url: z.optional(webAddress),
  price: z.optional(integer(0, MAX_INTEGER)),
  vat: z.optional(integer(0, 10_000)),
  currency: z.optional(z.string().check(z.regex(/^[A-Z]{3}$/))),
  paymentOptions: z.optional(integer(0, 255)),
  type: z.optional(oneOf(PRODUCT_TYPE)),
  bundle: z.optional(oneOf({ none: 0, dynamic: 1, oneOff: 2 })),
  status: z.optional(oneOf(PRODUCT_STATUS)),
  parentProductId: z.optional(clearableInteger(1, MAX_INTEGER)),
  quantityLimit: period,
  saleStart: z.optional(time),
  saleStop: z.optional(time),
  availableStart: z.optional(time),
  availableStop: z.optional(time),
  allowMultiSales: z.optional(flag),
  subscriptionPeriod: period,
  subscriptionRenewPrice: period,
  subscriptionRenewPeriod: period,
  subscriptionAutoRenew: z.optional(flag),
  subscriptionAutoRenewLockPeriod: period,
  subscriptionAutoRenewDisabled: z.optional(flag),
  subscriptionGracePeriod: period,
  subscriptionEmailReceiptLimit: period,
  subscriptionFinalEndDate: z.optional(time),
};

export type ProductFields = z.infer<z.ZodMiniObject<typeof productFields>>;

/** The fields SPiD's create requires. */
export const REQUIRED_PRODUCT_FIELDS = ["code", "name", "price", "vat", "paymentOptions", "type", "currency"] as const;

export const productWriteSchema = z.strictObject({ ...productFields, ...reservedFields });
