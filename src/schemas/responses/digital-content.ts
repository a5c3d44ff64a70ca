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
