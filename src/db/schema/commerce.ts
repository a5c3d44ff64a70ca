/** What clients sell (products) and what users hold of it (digital contents). */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { clients } from "./merchants-and-clients";
import { now } from "./now";
import { users } from "./users";

export const products = sqliteTable(
  "products",
  {
    id: integer("id").primaryKey(),
    parentProductId: integer("parent_product_id"),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id),
    /** SPiD's product types: 0 default, 1 digital content, 2 subscription, 3 physical, 4 classifieds (schemas/value-sets.ts). */
    type: integer("type").notNull().default(0),
    /** 0 not a bundle, 1 dynamic bundle, 2 one-time bundle. */
    bundle: integer("bundle").notNull().default(0),
    code: text("code"),
    name: text("name").notNull(),
    description: text("description"),
    url: text("url"),
    /** Minor currency units (øre, cents). */
    price: integer("price").notNull().default(0),
    vat: integer("vat").notNull().default(0),
    currency: text("currency").notNull(),
    paymentOptions: integer("payment_options").notNull().default(2),
    quantityLimit: integer("quantity_limit"),
    quantityCount: integer("quantity_count").notNull().default(0),
    saleStart: integer("sale_start"),
    saleStop: integer("sale_stop"),
    availableStart: integer("available_start"),
    availableStop: integer("available_stop"),
    subscriptionPeriod: integer("subscription_period"),
    subscriptionRenewPrice: integer("subscription_renew_price"),
    subscriptionRenewPeriod: integer("subscription_renew_period"),
    subscriptionAutoRenew: integer("subscription_auto_renew", { mode: "boolean" }).notNull().default(false),
    subscriptionAutoRenewLockPeriod: integer("subscription_auto_renew_lock_period"),
    subscriptionAutoRenewDisabled: integer("subscription_auto_renew_disabled", { mode: "boolean" })
      .notNull()
      .default(false),
    subscriptionGracePeriod: integer("subscription_grace_period"),
    subscriptionEmailReceiptLimit: integer("subscription_email_receipt_limit"),
    subscriptionFinalEndDate: integer("subscription_final_end_date"),
    allowMultiSales: integer("allow_multi_sales", { mode: "boolean" }).notNull().default(false),
    /** -1 deleted, 0 not available, 1 invisible, 2 unselectable, 3 available. */
    status: integer("status").notNull().default(0),
    purchaseUri: text("purchase_uri"),
    changedBy: integer("changed_by"),
    changed: integer("changed").notNull().default(now),
    createdBy: integer("created_by"),
    created: integer("created").notNull().default(now),
  },
  (t) => [
    /** The client's products in id order: the default sort. */
    index("products_client_idx").on(t.clientId),
    index("products_client_status_idx").on(t.clientId, t.status),
    index("products_client_type_idx").on(t.clientId, t.type),
    index("products_client_changed_idx").on(t.clientId, t.changed),
    index("products_client_created_idx").on(t.clientId, t.created),
    index("products_client_parent_idx").on(t.clientId, t.parentProductId),
    index("products_client_code_idx").on(t.clientId, t.code),
    index("products_client_name_idx").on(t.clientId, t.name),
    index("products_client_price_idx").on(t.clientId, t.price),
  ],
);

export const digitalContents = sqliteTable(
  "digital_contents",
  {
    id: integer("id").primaryKey(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    parentProductId: integer("parent_product_id"),
    clientId: text("client_id")
      .notNull()
      .references(() => clients.id),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    orderId: integer("order_id"),
    /** 3 available, 0 expired, -1 deleted (revoked), -2 blocked (schemas/value-sets.ts). */
    status: integer("status").notNull().default(3),
    count: integer("count").notNull().default(1),
    bundleId: integer("bundle_id"),
    statusMsg: text("status_msg"),
    created: integer("created").notNull().default(now),
    updated: integer("updated").notNull().default(now),
  },
  (t) => [
    /** The client's digital contents in id order: the default sort. */
    index("digital_contents_client_idx").on(t.clientId),
    index("digital_contents_client_user_idx").on(t.clientId, t.userId),
    /** A user's contents at every client: an export (docs/management.md "Export"). */
    index("digital_contents_user_idx").on(t.userId),
    index("digital_contents_client_product_idx").on(t.clientId, t.productId),
    index("digital_contents_client_parent_idx").on(t.clientId, t.parentProductId),
    index("digital_contents_client_status_idx").on(t.clientId, t.status),
    index("digital_contents_client_updated_idx").on(t.clientId, t.updated),
    index("digital_contents_client_created_idx").on(t.clientId, t.created),
  ],
);
