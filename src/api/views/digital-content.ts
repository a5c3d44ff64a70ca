/**
 * The spec's Digital content object: every integer as a string, datetimes as `YYYY-MM-DD HH:MM:SS`,
 * `statusMsg` the status's English name (SPiD's "Available") unless the row has its own.
 */
import type { DigitalContentRecord } from "../../db/queries/digital-contents";
import { formatDatetime } from "../../http/datetime";
import type { DigitalContent } from "../../schemas/responses/digital-content";
import { DIGITAL_CONTENT_STATUSES } from "../../schemas/value-sets";
import { integerText as text } from "./integer-text";

export function digitalContentView(d: DigitalContentRecord): DigitalContent {
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
    statusMsg: d.statusMsg ?? DIGITAL_CONTENT_STATUSES.get(String(d.status))?.en_US ?? null,
  };
}
