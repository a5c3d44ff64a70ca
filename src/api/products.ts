/**
 * GET /api/2/products: the calling client's products. Server or user token. Exact criteria
 * `productId`, `name`, `code`, `price`, `parentProductId` (several values each are OR-ed); status
 * and type filters as mapped below; deleted products only when asked for (docs/api.md "Products").
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { type ProductSearch, type ProductSort, searchProducts } from "../db/queries/products";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import {
  integerValues,
  type ListQuery,
  type ListSpec,
  pageOf,
  parseListQuery,
  listParameters,
  respondPage,
} from "../http/list-query";
import { requireToken } from "../middleware/auth";
import { PRODUCT_FIELDS, type ProductField, productSchema } from "../schemas/responses/product";
import { CLIENT_ID_PARAMETER, readableClientId } from "./client-scope";
import { PRODUCT_TYPE } from "../schemas/value-sets";
import { productView } from "./views/product";

/** Status filters and the product statuses they select. */
const STATUS_FILTERS: Record<string, number> = {
  deleted: -1,
  unavailable: 0,
  invisible: 1,
  unselectable: 2,
  available: 3,
};
/** Type filters and the product types they select: `content` is digital content, `subscription` subscriptions. */
const TYPE_FILTERS: Record<string, number> = {
  subscription: PRODUCT_TYPE.subscription,
  content: PRODUCT_TYPE.digitalContent,
};
const NOT_DELETED = [0, 1, 2, 3];

type Criterion = "productId" | "name" | "code" | "price" | "parentProductId" | "clientId";

const PRODUCT_LIST: ListSpec<ProductSort, ProductField, Criterion> = {
  sorts: ["productId", "name", "code", "price", "created", "changed", "status", "type"],
  defaultSort: ({ filters, bounded }) =>
    filters.other.includes("updated")
      ? [{ property: "changed", direction: "desc" }]
      : [{ property: bounded ? "created" : "productId", direction: "asc" }],
  statusFilters: Object.keys(STATUS_FILTERS),
  typeFilters: Object.keys(TYPE_FILTERS),
  otherFilters: ["updated"],
  fields: PRODUCT_FIELDS,
  criteria: ["productId", "name", "code", "price", "parentProductId", "clientId"],
};

function productSearch(clientId: string, query: ListQuery<ProductSort, ProductField, Criterion>): ProductSearch {
  const { filters, where } = query;
  const updated = filters.other.includes("updated");
  return {
    clientId,
    statuses: filters.status.length > 0 ? filters.status.map((f) => STATUS_FILTERS[f]!) : NOT_DELETED,
    types: filters.type.length > 0 ? filters.type.map((f) => TYPE_FILTERS[f]!) : null,
    productIds: integerValues("productId", where.productId),
    parentProductIds: integerValues("parentProductId", where.parentProductId),
    prices: integerValues("price", where.price),
    names: where.name,
    codes: where.code,
    timeColumn: updated ? "changed" : "created",
    ...pageOf(query),
  };
}

export const productRoutes = new Hono<AppEnv>().get(
  "/products",
  describeRoute({
    name: "List products",
    controller: "api/products#index",
    parameters: listParameters(PRODUCT_LIST, {
      clientId: CLIENT_ID_PARAMETER,
    }),
    success: { data: z.array(productSchema), collection: true },
  }),
  requireToken("products", "any"),
  async (c) => {
    const query = parseListQuery(new URL(c.req.url), PRODUCT_LIST, nowInSeconds());
    const clientId = await readableClientId(c, query.where.clientId);
    const found = await searchProducts(c.get("db")(), productSearch(clientId, query));
    if (found.length === 0) throw new ApiError(404, "invalid_request", "No products found");
    return respondPage(c, "Products", query, found, productView);
  },
);
