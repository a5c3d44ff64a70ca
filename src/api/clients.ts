/** GET /api/2/clients: the caller's merchant's clients, keyed by client ID. Server token. */
import { Hono } from "hono";
import * as z from "zod/mini";
import { readMerchantClients } from "../db/cached-reads";
import type { AppEnv } from "../env";
import { describeRoute, respond } from "../http/container";
import { requireToken } from "../middleware/auth";
import { clientSchema } from "../schemas/responses/client";
import { clientView } from "./views/client";

export const clientRoutes = new Hono<AppEnv>().get(
  "/clients",
  describeRoute({
    name: "List clients",
    controller: "api/clients#index",
    success: { data: z.record(z.string(), clientSchema) },
  }),
  requireToken("clients", "server"),
  async (c) => {
    const clients = await readMerchantClients(c.get("db"), c.get("caller").merchantId, c.get("bookmarked"));
    return respond(c, {
      object: "Clients",
      data: Object.fromEntries(clients.map((client) => [client.id, clientView(client)])),
    });
  },
);
