/** The spec's Digital content object. */
import * as z from "zod/mini";
import { datetime, integerText, nullableIntegerText, nullableText } from "./values";

export const digitalContentSchema = z.object({
  userProductId: integerText,
  productId: integerText,
  parentProductId: nullableIntegerText,
  clientId: z.string(),
  userId: integerText,
  orderId: nullableIntegerText,
  status: integerText,
  count: integerText,
  updated: datetime,
  created: datetime,
  bundleId: nullableIntegerText,
  statusMsg: nullableText,
});

z.globalRegistry.add(digitalContentSchema, { id: "DigitalContent" });

export type DigitalContent = z.infer<typeof digitalContentSchema>;
export type DigitalContentField = keyof DigitalContent;
export const DIGITAL_CONTENT_FIELDS = Object.keys(digitalContentSchema.shape) as DigitalContentField[];

/**
 * SPiD's user product access (spid-tech-docs `types/user-product-access.edn`): `result` is true
 * when the user has access. The subscription fields are SPiD's for subscriptions, which this
 * service does not hold; they are never sent.
 */
export const productAccessSchema = z.object({
  productId: integerText,
  result: z.boolean(),
  subscriptionId: z.optional(integerText),
  startDate: z.optional(datetime),
  expires: z.optional(datetime),
  autoRenew: z.optional(integerText),
  gracePeriod: z.optional(z.string()),
});

z.globalRegistry.add(productAccessSchema, { id: "UserProductAccess" });

/** GET /user/{userId}/products: the user's digital contents keyed by productId, as SPiD answers it. */
export const userProductsSchema = z.record(integerText, digitalContentSchema);
