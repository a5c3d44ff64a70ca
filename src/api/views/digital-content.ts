/** The spec's Digital content object: every integer as a string, datetimes as `YYYY-MM-DD HH:MM:SS`. */
import type { DigitalContentRecord } from "../../db/queries/digital-contents";
import { formatDatetime } from "../../http/datetime";
import { integerText as text } from "./integer-text";

export function digitalContentView(d: DigitalContentRecord) {
  return {
    userProductId: String(d.id),
    productId: String(d.productId),
    parentProductId: text(d.parentProductId),
    clientId: d.clientId,
    userId: String(d.userId),
    orderId: text(d.orderId),
    status: String(d.status),
    count: String(d.count),
    updated: formatDatetime(d.updated),
    created: formatDatetime(d.created),
    bundleId: text(d.bundleId),
    statusMsg: d.statusMsg,
  };
}

export type DigitalContentField = keyof ReturnType<typeof digitalContentView>;

/** Every property of the Digital content object, for `fields=` (a test holds it to the view's keys). */
export const DIGITAL_CONTENT_FIELDS = [
  "userProductId",
  "productId",
  "parentProductId",
  "clientId",
  "userId",
  "orderId",
  "status",
  "count",
  "updated",
  "created",
  "bundleId",
  "statusMsg",
] as const satisfies readonly DigitalContentField[];
