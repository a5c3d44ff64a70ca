/** The spec's Client object, as `GET /api/2/clients` lists it. */
import * as z from "zod/mini";
import { integerText } from "./values";

export const clientSchema = z.object({
  id: z.string(),
  name: z.string(),
  alias: z.string(),
  domain: z.string(),
  fields: z.record(z.string(), z.optional(z.union([z.boolean(), z.string()]))),
  merchantId: z.number(),
  css: z.record(z.string(), z.unknown()),
  termsCss: z.record(z.string(), z.unknown()),
  unregisteredPayments: z.boolean(),
  accessTokenLifetime: integerText,
  enableSso: z.boolean(),
  universalDataAccess: z.boolean(),
  redirectUris: z.array(z.string()),
  autoApprove: z.boolean(),
});

z.globalRegistry.add(clientSchema, { id: "Client" });

export type Client = z.infer<typeof clientSchema>;
