/**
 * GET /api/2/digitalcontents: the calling client's digital contents. Server token. Criteria
 * `userId`, `status`, `productId`, and `parentProductId` (that product and its child products);
 * without a status filter, deleted and blocked items are left out (docs/api.md "Digital contents").
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import {
  type DigitalContentSearch,
  type DigitalContentSort,
  searchDigitalContents,
} from "../db/queries/digital-contents";
import type { AppEnv } from "../env";
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
import {
  DIGITAL_CONTENT_FIELDS,
  type DigitalContentField,
  digitalContentSchema,
} from "../schemas/responses/digital-content";
import { DIGITAL_CONTENT_STATUS, DIGITAL_CONTENT_STATUS_FILTERS } from "../schemas/value-sets";
import { CLIENT_ID_PARAMETER, readableClientId } from "./client-scope";
import { digitalContentView } from "./views/digital-content";

const STATUS_FILTERS = DIGITAL_CONTENT_STATUS_FILTERS;
/** Without a status filter: every status but deleted and blocked. */
const NOT_EXCLUDED = [DIGITAL_CONTENT_STATUS.available, DIGITAL_CONTENT_STATUS.expired];

type Criterion = "userId" | "status" | "productId" | "parentProductId" | "clientId";

const DIGITAL_CONTENT_LIST: ListSpec<DigitalContentSort, DigitalContentField, Criterion> = {
  sorts: ["userProductId", "productId", "userId", "status", "created", "updated"],
  defaultSort: ({ filters, bounded }) =>
    filters.other.includes("updated")
      ? [{ property: "updated", direction: "desc" }]
      : [{ property: bounded ? "created" : "userProductId", direction: "asc" }],
  statusFilters: Object.keys(STATUS_FILTERS),
  typeFilters: [],
  otherFilters: ["updated"],
  fields: DIGITAL_CONTENT_FIELDS,
  criteria: ["userId", "status", "productId", "parentProductId", "clientId"],
};

/** The statuses to show: those the filters select (any, with `all`), narrowed by `status=`. */
function statuses(filters: string[], asked: number[] | undefined): number[] | null {
  const selected = filters.length === 0 ? [NOT_EXCLUDED] : filters.map((f) => STATUS_FILTERS[f]!);
  const allowed = selected.some((s) => s === null) ? null : selected.flatMap((s) => s ?? []);
  if (asked === undefined) return allowed;
  return allowed === null ? asked : asked.filter((status) => allowed.includes(status));
}

function digitalContentSearch(
  clientId: string,
  query: ListQuery<DigitalContentSort, DigitalContentField, Criterion>,
): DigitalContentSearch {
  const { filters, where } = query;
  return {
    clientId,
    statuses: statuses(filters.status, integerValues("status", where.status)),
    userIds: integerValues("userId", where.userId),
    productIds: integerValues("productId", where.productId),
    familyProductIds: integerValues("parentProductId", where.parentProductId),
    timeColumn: filters.other.includes("updated") ? "updated" : "created",
    ...pageOf(query),
  };
}

export const digitalContentRoutes = new Hono<AppEnv>().get(
  "/digitalcontents",
  describeRoute({
    name: "List digital contents",
    controller: "api/digitalcontents#index",
    parameters: listParameters(DIGITAL_CONTENT_LIST, {
      parentProductId: "The product and its child products",
      clientId: CLIENT_ID_PARAMETER,
    }),
    success: { data: z.array(digitalContentSchema), collection: true },
  }),
  requireToken("digitalcontents", "server"),
  async (c) => {
    const query = parseListQuery(new URL(c.req.url), DIGITAL_CONTENT_LIST, nowInSeconds());
    const clientId = await readableClientId(c, query.where.clientId);
    const found = await searchDigitalContents(c.get("db")(), digitalContentSearch(clientId, query));
    return respondPage(c, "DigitalContents", query, found, digitalContentView);
  },
);
