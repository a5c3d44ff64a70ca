/**
 * A user's access to a client's digital content, as SPiD's "Manage digital content access"
 * (spid-tech-docs `endpoints/user-userid-product*.md`, `cached-endpoints.edn`):
 *
 * - GET /user/{userId}/product/{productId}: does the user have access (server or user token);
 * - POST: grant it; DELETE: revoke it (server token);
 * - GET /user/{userId}/products: the user's products, keyed by productId (server or user token).
 *
 * The product is the calling client's, or, with `clientId`, another client's of its merchant when
 * the caller is an admin client (client-scope.ts); the user must be connected to that client. A
 * user token answers for its own user only (path-user.ts). Only digital-content products are
 * granted and revoked; a subscription is SPiD's own kind, not held here (docs/api.md "Product access").
 */
import { type Context, Hono } from "hono";
import { readMerchantClients, readUserProfile } from "../db/cached-reads";
import {
  type AccessProduct,
  findAccessProduct,
  grantAccess,
  productAndAccess,
  revokeAccess,
  userProducts,
} from "../db/queries/product-access";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { wakeSchedules } from "../events/callbacks";
import { describeRoute, respond } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { type ListSpec, listParameters, pageOf, parseListQuery, selectFields } from "../http/list-query";
import type { Parameter } from "../http/openapi";
import { parseIntegerId } from "../http/user-key";
import { requireToken } from "../middleware/auth";
import {
  DIGITAL_CONTENT_FIELDS,
  type DigitalContentField,
  digitalContentSchema,
  productAccessSchema,
  userProductsSchema,
} from "../schemas/responses/digital-content";
import {
  DIGITAL_CONTENT_STATUS,
  DIGITAL_CONTENT_STATUS_FILTERS,
  PRODUCT_STATUS,
  PRODUCT_TYPE,
} from "../schemas/value-sets";
import { CLIENT_ID_PARAMETER, readableClientId } from "./client-scope";
import { pathUser } from "./path-user";
import { digitalContentView } from "./views/digital-content";

const PARAMETERS: Parameter[] = [
  {
    name: "clientId",
    in: "query",
    description: "Another client of the merchant (admin clients only)",
    schema: { type: "string" },
  },
];

/**
 * The path's user and the client the call acts for: the caller, or another client of its merchant
 * named by `clientId` (admin clients). The user must be connected to that client: one connected
 * only to other clients of the merchant is a 403, anyone else a 404.
 */
async function holderOf(c: Context<AppEnv>, fresh: boolean) {
  const userId = await pathUser(c);
  if (userId === undefined) throw new ApiError(404, "invalid_request", "User not found");
  const caller = c.get("caller");
  const clientId = await readableClientId(c, c.req.queries("clientId"));
  const profile = await readUserProfile(c.get("db"), userId, fresh);
  const connections = profile?.connections.filter((connection) => connection.merchantId === caller.merchantId) ?? [];
  if (connections.length === 0) throw new ApiError(404, "invalid_request", "User not found");
  if (!connections.some((connection) => connection.clientId === clientId)) {
    throw new ApiError(403, "access_denied", "Client is not authorized to access this user");
  }
  return { userId, clientId };
}

/** The path's product id, when it is one. */
const pathProductId = (c: Context<AppEnv>) => parseIntegerId(c.req.param("productId") ?? "");

/**
 * A grant's or a revocation's user and product: the user fresh, the product the acting client's
 * own and digital content (`failure`: SPiD's text for anything else).
 */
async function changeable(c: Context<AppEnv>, failure: string) {
  const { userId, clientId } = await holderOf(c, true);
  const id = pathProductId(c);
  const product = askable(id === undefined ? undefined : await findAccessProduct(c.get("db")(), id), [clientId]);
  mustBeDigitalContent(product, failure);
  return { userId, product };
}

/** The product, when it is one of `clientIds`' and not deleted; otherwise SPiD's 404. */
function askable(product: AccessProduct | undefined, clientIds: string[]): AccessProduct {
  if (!product || !clientIds.includes(product.clientId) || product.status === PRODUCT_STATUS.deleted) {
    throw new ApiError(404, "invalid_request", "Product not found");
  }
  return product;
}

/** Grants and revocations are for digital content only: SPiD's texts, and why. */
function mustBeDigitalContent(product: AccessProduct, failure: string): void {
  if (product.type === PRODUCT_TYPE.subscription) {
    throw new ApiError(400, "invalid_request", `${failure}: a subscription is not granted or revoked as a product`);
  }
  if (product.type !== PRODUCT_TYPE.digitalContent) {
    throw new ApiError(400, "invalid_request", `${failure}: only digital content products are granted and revoked`);
  }
}

/** A change of access is told to the merchant's clients, any of which may read it (`filters=merchant`). */
const tellMerchant = (c: Context<AppEnv>) => ({ scope: { merchantId: c.get("caller").merchantId } });

const access = (product: AccessProduct) => ({ productId: String(product.id), result: true });

type Sort = never;
const STATUS_FILTERS = DIGITAL_CONTENT_STATUS_FILTERS;
const { available } = DIGITAL_CONTENT_STATUS;

const USER_PRODUCTS: ListSpec<Sort, DigitalContentField, "clientId"> = {
  sorts: [],
  defaultSort: () => [],
  statusFilters: Object.keys(STATUS_FILTERS),
  typeFilters: [],
  otherFilters: [],
  fields: DIGITAL_CONTENT_FIELDS,
  criteria: ["clientId"],
};

/** The statuses the filters select: `active` (available) by default, every one with `all` or `none`. */
function statusesOf(filters: string[]): number[] | null {
  const selected = filters.length === 0 ? [[available]] : filters.map((filter) => STATUS_FILTERS[filter]!);
  return selected.some((statuses) => statuses === null) ? null : (selected.flat() as number[]);
}

export const productAccessRoutes = new Hono<AppEnv>()
  .get(
    "/user/:userId/product/:productId",
    describeRoute({
      name: "Check a user's access to a product",
      controller: "api/product-access#show",
      description:
        '`result: true` when the user holds the product or its parent. No access (a subscription included) is 404 "No access to that product.". `filters=merchant`: a product of any client of the merchant, for a user of the calling client.',
      parameters: [...PARAMETERS, { name: "filters", in: "query", schema: { type: "string", enum: ["merchant"] } }],
      success: { data: productAccessSchema },
    }),
    requireToken("user/product", "any"),
    async (c) => {
      const filters = c.req.queries("filters");
      if (filters !== undefined && (filters.length > 1 || filters[0] !== "merchant")) {
        throw new ApiError(400, "invalid_request", "Invalid parameter value: filters (accepted: merchant)");
      }
      const fresh = c.get("bookmarked");
      const { userId, clientId } = await holderOf(c, fresh);
      // The merchant filter: a product of any of the merchant's clients, for a user of this one.
      const merchantClients = async () =>
        (await readMerchantClients(c.get("db"), c.get("caller").merchantId, fresh)).map((client) => client.id);
      const id = pathProductId(c);
      const found = id === undefined ? undefined : await productAndAccess(c.get("db")(), userId, id);
      const product = askable(found?.product, filters === undefined ? [clientId] : await merchantClients());
      if (!found?.held) throw new ApiError(404, "invalid_request", "No access to that product.");
      return respond(c, { object: "UserProductAccess", data: access(product) });
    },
  )
  .post(
    "/user/:userId/product/:productId",
    describeRoute({
      name: "Grant a user access to a product",
      controller: "api/product-access#create",
      description:
        'Digital content products only; granting again changes nothing. The grant shows at once in GET /user/{userId}/products and /digitalcontents (send back the `x-d1-bookmark` it returns). 400 "Was not able to grant access" for a subscription, another type, or a blocked grant; 404 "Product not found".',
      parameters: PARAMETERS,
      success: { data: productAccessSchema },
    }),
    requireToken("user/product", "server"),
    async (c) => {
      const { userId, product } = await changeable(c, "Was not able to grant access");
      const holder = { clientId: product.clientId, userId };
      const { row, told } = await grantAccess(c.get("db")(), holder, product, tellMerchant(c), nowInSeconds());
      wakeSchedules(c, told);
      if (row.status !== available) {
        throw new ApiError(400, "invalid_request", "Was not able to grant access: the user's access to it is blocked");
      }
      return respond(c, { object: "UserProductAccess", data: access(product) });
    },
  )
  .delete(
    "/user/:userId/product/:productId",
    describeRoute({
      name: "Revoke a user's access to a product",
      controller: "api/product-access#destroy",
      description:
        'Digital content products only: the user\'s grant, now deleted (status -1), as SPiD answers it; revoking again answers the same. 400 "Was not able to remove access" when the user never held it, or for a subscription or another type; 404 "Product not found".',
      parameters: PARAMETERS,
      success: { data: digitalContentSchema },
    }),
    requireToken("user/product", "server"),
    async (c) => {
      const { userId, product } = await changeable(c, "Was not able to remove access");
      const holder = { clientId: product.clientId, userId };
      const { row, told } = await revokeAccess(c.get("db")(), holder, product.id, tellMerchant(c), nowInSeconds());
      wakeSchedules(c, told);
      if (!row) throw new ApiError(400, "invalid_request", "Was not able to remove access: the user does not hold it");
      return respond(c, { object: "DigitalContent", data: digitalContentView(row) });
    },
  )
  .get(
    "/user/:userId/products",
    describeRoute({
      name: "List a user's products",
      controller: "api/product-access#index",
      description:
        "The user's digital contents at the client, keyed by productId (the newest row of each), in product order; `filters` active (the default), expired, all or none.",
      parameters: listParameters(USER_PRODUCTS, { clientId: CLIENT_ID_PARAMETER }),
      success: { data: userProductsSchema, collection: true },
    }),
    requireToken("user/products", "any"),
    async (c) => {
      const query = parseListQuery(new URL(c.req.url), USER_PRODUCTS, nowInSeconds());
      const { userId, clientId } = await holderOf(c, c.get("bookmarked"));
      const rows = await userProducts(c.get("db")(), {
        clientId,
        userId,
        statuses: statusesOf(query.filters.status),
        ...pageOf(query),
      });
      const { where, ...options } = query;
      return respond(c, {
        object: "DigitalContent",
        type: "collection",
        data: Object.fromEntries(
          rows.map((row) => [String(row.productId), selectFields(digitalContentView(row), query.fields)]),
        ),
        meta: { count: rows.length, offset: query.offset },
        params: { options, where },
      });
    },
  );
