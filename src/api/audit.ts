/**
 * GET /api/2/audit: the audit trail (docs/management.md "Audit trail"), newest first, paginated like
 * every list. An admin client reads its merchant's entries; the operator's client every merchant's.
 */
import { Hono } from "hono";
import * as z from "zod/mini";
import { listAuditEvents } from "../db/queries/audit";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { integerValues, type ListSpec, listParameters, pageOf, parseListQuery, respondPage } from "../http/list-query";
import { requireToken } from "../middleware/auth";
import { auditEventSchema } from "../schemas/responses/management";
import { callerAuthority, requireAdministration } from "./manage/authority";
import { auditEventView } from "./views/audit-event";

const AUDIT_FIELDS = [
  "id",
  "time",
  "merchantId",
  "clientId",
  "actor",
  "action",
  "userId",
  "targetClientId",
  "ip",
  "detail",
] as const;

const AUDIT: ListSpec<never, (typeof AUDIT_FIELDS)[number], "userId" | "clientId" | "action" | "merchantId"> = {
  sorts: [],
  defaultSort: () => [],
  statusFilters: [],
  typeFilters: [],
  otherFilters: [],
  fields: AUDIT_FIELDS,
  criteria: ["userId", "clientId", "action", "merchantId"],
};

/** A criterion's one value; several are a 400 naming it. */
function single(name: string, values: string[] | undefined): string | undefined {
  if (values !== undefined && values.length !== 1) {
    throw new ApiError(400, "invalid_request", `Invalid parameter value: ${name} (one value)`);
  }
  return values?.[0];
}

function singleInteger(name: string, values: string[] | undefined): number | undefined {
  return integerValues(name, values === undefined ? undefined : [single(name, values)!])?.[0];
}

export const auditRoutes = new Hono<AppEnv>().get(
  "/audit",
  describeRoute({
    name: "Read the audit trail",
    controller: "api/audit#index",
    description:
      "Management writes, sign-ins, revocations and consent changes, newest first: who (client, in which right), what, when, from which address, and what changed (never a secret). Admin clients read their merchant's; the operator's client every merchant's (`merchantId` narrows it).",
    parameters: listParameters(AUDIT, {
      userId: "The user an entry concerns (userId)",
      clientId: "The acting client",
      action: "An action: user.status, user.logout, user.connection.withdraw, ...",
      merchantId: "The operator's client only: one merchant's trail",
    }),
    success: { data: z.array(auditEventSchema), collection: true },
  }),
  requireToken("audit", "server"),
  async (c) => {
    const query = parseListQuery(new URL(c.req.url), AUDIT, nowInSeconds());
    const authority = await callerAuthority(c);
    requireAdministration(authority);
    const { where } = query;
    const merchantId = singleInteger("merchantId", where.merchantId);
    if (merchantId !== undefined && authority.actor !== "operator") {
      throw new ApiError(403, "access_denied", "Only the operator's client reads another merchant's trail");
    }
    const rows = await listAuditEvents(
      c.get("db")(),
      {
        merchantId: authority.actor === "operator" ? (merchantId ?? null) : authority.merchantId,
        userId: singleInteger("userId", where.userId),
        clientId: single("clientId", where.clientId),
        action: single("action", where.action),
        since: query.since,
        until: query.until,
      },
      pageOf(query),
    );
    return respondPage(c, "AuditEvent", query, rows, auditEventView);
  },
);
