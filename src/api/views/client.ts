import type { ClientRecord } from "../../db/queries/clients";
import type { Client } from "../../schemas/responses/client";

/** The spec's Client object. Secrets, allow-lists and quotas are never part of it. */
export function clientView(client: ClientRecord): Client {
  return {
    id: client.id,
    name: client.name,
    alias: client.alias,
    domain: client.domain,
    fields: client.fields,
    merchantId: client.merchantId,
    css: client.css,
    termsCss: client.termsCss,
    unregisteredPayments: client.unregisteredPayments,
    accessTokenLifetime: String(client.accessTokenLifetime),
    enableSso: client.enableSso,
    universalDataAccess: client.universalDataAccess,
    redirectUris: client.redirectUris,
    autoApprove: client.autoApprove,
  };
}
