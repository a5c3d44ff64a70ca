/**
 * A client's products, one at a time (SPiD's `GET`/`POST /product/{id}` and `POST /product`;
 * docs/management.md "Products"): read, create (with an `Idempotency-Key` for retries) and change,
 * the status included (-1 deletes). A client manages its own products; each write is one D1 batch
 * with its audit entry.
 */
import { sql } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { violatesUnique } from "../../db/constraints";
import {
  findProductRecord,
  insertProduct,
  newProductId,
  type ProductRecord,
  updateProduct,
} from "../../db/queries/products";
import type { AppEnv } from "../../env";
import { ApiError } from "../../errors";
import { auditEntry } from "../../events/audit";
import { describeRoute, respond } from "../../http/container";
import { nowInSeconds } from "../../http/datetime";
import {
  earlierResource,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PARAMETER,
  idempotencyOf,
  keyRecord,
} from "../../http/idempotency";
import { parseIntegerId } from "../../http/user-key";
import { validate } from "../../http/validation";
import { requireToken } from "../../middleware/auth";
import { fieldsOf } from "../../schemas/form-fields";
import {
  type ProductFields,
  productFields,
  productWriteSchema,
  REQUIRED_PRODUCT_FIELDS,
} from "../../schemas/product-fields";
import { productSchema } from "../../schemas/responses/product";
import { productView } from "../views/product";
import { callerAuthority } from "./authority";

const FIELDS =
  "`code`, `name`, `description`, `url`, `price` (minor units), `vat` (× 10000), `currency`, `paymentOptions`, `type`, `bundle`, `status`, `parentProductId`, `quantityLimit`, `saleStart`, `saleStop`, `availableStart`, `availableStop` (Unix seconds or YYYY-MM-DD HH:MM:SS), `allowMultiSales`, and the `subscription*` fields, as SPiD names them";

const notFound = () => new ApiError(404, "invalid_request", "Product not found");

/** The path's product, when it is the calling client's. */
async function ownProduct(c: Context<AppEnv>): Promise<ProductRecord> {
  const id = parseIntegerId(c.req.param("productId") ?? "");
  const product = id === undefined ? undefined : await findProductRecord(c.get("db")(), id);
  if (!product || product.clientId !== c.get("caller").clientId) throw notFound();
  return product;
}

/** A parent must be another product of the same client. */
async function checkParent(c: Context<AppEnv>, fields: ProductFields, productId: number | null): Promise<void> {
  const parentId = fields.parentProductId;
  if (parentId === undefined || parentId === null) return;
  const parent = await findProductRecord(c.get("db")(), parentId);
  if (!parent || parent.clientId !== c.get("caller").clientId || parent.id === productId) {
    throw new ApiError(
      400,
      "invalid_request",
      "Failed to create or update product: parentProductId names no other product of the client",
    );
  }
}

/** The names of the fields sent, for the audit trail (never their values). */
const namesOf = (fields: ProductFields) => Object.keys(fields);

export const productManagementRoutes = new Hono<AppEnv>()
  .get(
    "/product/:productId",
    describeRoute({
      name: "Get a product",
      controller: "api/manage/products#show",
      description:
        "One of the calling client's products, whatever its status. Another client's, or none: 404 \"Product not found\".",
      success: { data: productSchema },
    }),
    requireToken("product", "any"),
    async (c) => respond(c, { object: "Product", data: productView(await ownProduct(c)) }),
  )
  .post(
    "/product",
    describeRoute({
      name: "Create a product",
      controller: "api/manage/products#create",
      description: `SPiD's create: ${FIELDS}. Required: ${REQUIRED_PRODUCT_FIELDS.join(", ")} (400 "Missing one or more required parameters"). The product is the calling client's; its id comes after every existing product's. With an \`${IDEMPOTENCY_KEY_HEADER}\` header, a retry answers the product the first made.`,
      parameters: [IDEMPOTENCY_KEY_PARAMETER],
      success: { status: 201, data: productSchema },
    }),
    requireToken("product", "server"),
    validate("form", productWriteSchema),
    async (c) => {
      const authority = await callerAuthority(c);
      const db = c.get("db")();
      const now = nowInSeconds();
      // A retry of a create that was made answers what it made, before anything else is checked.
      const idempotency = await idempotencyOf(c, authority.clientId);
      const madeBefore = async () => {
        const resource = await earlierResource(db, idempotency, now);
        if (resource === undefined) return undefined;
        const product = await findProductRecord(db, Number(resource.slice("product:".length)));
        return product && respond(c, { object: "Product", data: productView(product) }, 201);
      };
      const repeated = await madeBefore();
      if (repeated) return repeated;
      const fields = fieldsOf(productFields, c.req.valid("form")) as ProductFields;
      const missing = REQUIRED_PRODUCT_FIELDS.filter((name) => fields[name] === undefined || fields[name] === null);
      if (missing.length > 0) {
        throw new ApiError(400, "invalid_request", `Missing one or more required parameters: ${missing.join(", ")}`);
      }
      await checkParent(c, fields, null);
      const detail = sql`json_object('productId', ${newProductId}, 'fields', json(${JSON.stringify(namesOf(fields))}))`;
      try {
        const [[made]] = await db.batch([
          insertProduct(db, {
            ...fields,
            clientId: authority.clientId,
            name: fields.name!,
            currency: fields.currency!,
            created: now,
            changed: now,
          }),
          auditEntry(c, authority, { action: "product.create", detail }, now),
          ...keyRecord(db, idempotency, sql<string>`'product:' || ${newProductId}`, now),
        ]);
        return respond(c, { object: "Product", data: productView((await findProductRecord(db, made!.id))!) }, 201);
      } catch (err) {
        // A racing request with the same key made it first: answer what it made.
        const raced = violatesUnique(err, "idempotency_keys") ? await madeBefore() : undefined;
        if (raced) return raced;
        throw err;
      }
    },
  )
  .post(
    "/product/:productId",
    describeRoute({
      name: "Change a product",
      controller: "api/manage/products#update",
      description: `SPiD's update: only the fields sent change (${FIELDS}); \`status\` -1 deletes the product (it leaves the lists, and no access to it is granted any more). The calling client's products only.`,
      success: { data: productSchema },
    }),
    requireToken("product", "server"),
    validate("form", productWriteSchema),
    async (c) => {
      const product = await ownProduct(c);
      const fields = fieldsOf(productFields, c.req.valid("form")) as ProductFields;
      if (Object.keys(fields).length === 0) throw new ApiError(400, "invalid_request", "No field to change was sent");
      if (fields.name === null || fields.currency === null) {
        throw new ApiError(
          400,
          "invalid_request",
          "Failed to create or update product: name and currency cannot be cleared",
        );
      }
      await checkParent(c, fields, product.id);
      const authority = await callerAuthority(c);
      const db = c.get("db")();
      const now = nowInSeconds();
      await db.batch([
        updateProduct(db, product.id, { ...fields, name: fields.name!, currency: fields.currency!, changed: now }),
        auditEntry(
          c,
          authority,
          { action: "product.update", detail: { productId: product.id, fields: namesOf(fields) } },
          now,
        ),
      ]);
      return respond(c, { object: "Product", data: productView((await findProductRecord(db, product.id))!) });
    },
  );
