/** The spec's Product object: integers as strings where the spec says so. */
import * as z from "zod/mini";
import { datetime, integerText, nullableIntegerText, nullableText } from "./values";

const nullableDatetime = z.nullable(datetime);
const flag = z.enum(["0", "1"]);
const nullableNumber = z.nullable(z.number());

export const productSchema = z.object({
  productId: integerText,
  parentProductId: nullableIntegerText,
  clientId: z.string(),
  type: integerText,
  bundle: integerText,
  code: nullableText,
  name: z.string(),
  description: nullableText,
  url: nullableText,
  /** Minor currency units, as an integer string ("9900" is 99,00 in `currency`). */
  price: integerText,
  vat: integerText,
  currency: z.string(),
  paymentOptions: integerText,
  quantityLimit: nullableIntegerText,
  quantityCount: integerText,
  saleStart: nullableDatetime,
  saleStop: nullableDatetime,
  availableStart: nullableDatetime,
  availableStop: nullableDatetime,
  subscriptionPeriod: nullableNumber,
  subscriptionRenewPrice: nullableIntegerText,
  subscriptionRenewPeriod: nullableNumber,
  subscriptionAutoRenew: flag,
  subscriptionAutoRenewLockPeriod: nullableNumber,
  subscriptionAutoRenewDisabled: flag,
  subscriptionGracePeriod: nullableIntegerText,
  subscriptionEmailReceiptLimit: nullableIntegerText,
  subscriptionFinalEndDate: nullableDatetime,
  allowMultiSales: flag,
  status: integerText,
  changedBy: nullableIntegerText,
  changed: datetime,
  createdBy: nullableIntegerText,
  created: datetime,
  purchaseUri: nullableText,
});

z.globalRegistry.add(productSchema, { id: "Product" });

export type Product = z.infer<typeof productSchema>;
export type ProductField = keyof Product;
export const PRODUCT_FIELDS = Object.keys(productSchema.shape) as ProductField[];
