/**
 * The spec's Product object: integers the spec types "integer (as string)", enum values and `1`/`0`
 * flags as strings; prices in minor units as integer strings (SPiD's `types/price.edn`: "9900" is
 * 99,00); periods in seconds as numbers; datetimes as `YYYY-MM-DD HH:MM:SS`,
 * null where a product has none (a sale with no start, say).
 */
import type { ProductRecord } from "../../db/queries/products";
import { formatDatetime } from "../../http/datetime";
import type { Product } from "../../schemas/responses/product";
import { integerText as text } from "./integer-text";

const datetime = (seconds: number | null) => (seconds === null ? null : formatDatetime(seconds));
const flag = (value: boolean): "0" | "1" => (value ? "1" : "0");

export function productView(p: ProductRecord): Product {
  return {
    productId: String(p.id),
    parentProductId: text(p.parentProductId),
    clientId: p.clientId,
    type: String(p.type),
    bundle: String(p.bundle),
    code: p.code,
    name: p.name,
    description: p.description,
    url: p.url,
    price: String(p.price),
    vat: String(p.vat),
    currency: p.currency,
    paymentOptions: String(p.paymentOptions),
    quantityLimit: text(p.quantityLimit),
    quantityCount: String(p.quantityCount),
    saleStart: datetime(p.saleStart),
    saleStop: datetime(p.saleStop),
    availableStart: datetime(p.availableStart),
    availableStop: datetime(p.availableStop),
    subscriptionPeriod: p.subscriptionPeriod,
    subscriptionRenewPrice: text(p.subscriptionRenewPrice),
    subscriptionRenewPeriod: p.subscriptionRenewPeriod,
    subscriptionAutoRenew: flag(p.subscriptionAutoRenew),
    subscriptionAutoRenewLockPeriod: p.subscriptionAutoRenewLockPeriod,
    subscriptionAutoRenewDisabled: flag(p.subscriptionAutoRenewDisabled),
    subscriptionGracePeriod: text(p.subscriptionGracePeriod),
    subscriptionEmailReceiptLimit: text(p.subscriptionEmailReceiptLimit),
    subscriptionFinalEndDate: datetime(p.subscriptionFinalEndDate),
    allowMultiSales: flag(p.allowMultiSales),
    status: String(p.status),
    changedBy: text(p.changedBy),
    changed: formatDatetime(p.changed),
    createdBy: text(p.createdBy),
    created: formatDatetime(p.created),
    purchaseUri: p.purchaseUri,
  };
}
