/**
 * Turns a validated import file into the statements that write it: upserts keyed by each row's
 * natural id, so a re-import updates rather than duplicates. A user's e-mails, phone numbers,
 * addresses and accounts, and a mail's events, are replaced as a whole; user-client connections
 * are only ever added (a re-import never revokes access a user granted since). A user imported
 * without a password keeps the one stored. The caller runs the statements as one batch, so a
 * file is written all or nothing, and never under another DATA_PROTECTION_KEY than the one the
 * database's data is protected under.
 */
import { eq, getTableColumns, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type {
  BaseSQLiteDatabase,
  SQLiteColumn,
  SQLiteInsertValue,
  SQLiteTable,
  SQLiteUpdateSetSource,
} from "drizzle-orm/sqlite-core";
import type { ImportFile } from "../schemas/import";
import { keyFingerprint, protectSecret, sealSecret } from "../security/data-protection";
import { hashPassword } from "../security/password";
import { randomToken } from "../security/random-token";
import * as s from "./schema";
import { CURRENT_LOCATION } from "./schema";
import { searchKeyOrNull } from "./search-key";

/** Any async SQLite driver: D1 in the Worker, a statement recorder in the Node import script. */
// biome-ignore lint/suspicious/noExplicitAny: the driver's result type is irrelevant here
export type AnyDatabase = BaseSQLiteDatabase<"async", any, any>;
/** A batchable statement that can also render itself as SQL with parameters. */
export type ImportStatement = BatchItem<"sqlite"> & { toSQL(): { sql: string; params: unknown[] } };

type User = ImportFile["users"][number];
type Address = User["currentLocation"][number];

export async function buildImportStatements(
  db: AnyDatabase,
  file: ImportFile,
  dataProtectionKey: string,
): Promise<ImportStatement[]> {
  const upsert = <T extends SQLiteTable>(table: T, key: SQLiteColumn, row: SQLiteInsertValue<T>) => {
    const columns = getTableColumns(table) as Record<string, SQLiteColumn>;
    const set = Object.fromEntries(
      Object.keys(row)
        .filter((name) => columns[name] !== key)
        .map((name) => [name, sql.raw(`excluded."${columns[name]!.name}"`)]),
    );
    return db
      .insert(table)
      .values(row)
      .onConflictDoUpdate({ target: key, set: set as SQLiteUpdateSetSource<T> });
  };
  // First, so that under another key than the database's the batch fails before any row is
  // written (migration 0011's trigger), and the first import records the key's fingerprint.
  const statements: ImportStatement[] = [
    upsert(s.keyFingerprints, s.keyFingerprints.name, {
      name: "DATA_PROTECTION_KEY",
      fingerprint: await keyFingerprint(dataProtectionKey),
    }),
  ];

  for (const m of file.merchants) {
    statements.push(upsert(s.merchants, s.merchants.id, { id: m.merchantId, name: m.name, updated: sql`unixepoch()` }));
  }

  for (const c of file.clients) {
    statements.push(
      upsert(s.clients, s.clients.id, {
        id: c.id,
        merchantId: c.merchantId,
        name: c.name,
        alias: c.alias,
        domain: c.domain,
        // A public client without a secret gets the hash of one nobody knows: no secret matches it.
        secretHash: await protectSecret({ current: dataProtectionKey }, c.secret ?? randomToken()),
        signingSecretSealed:
          c.signingSecret === undefined ? null : await sealSecret({ current: dataProtectionKey }, c.signingSecret),
        // The imported secrets are the client's only ones: a rotation's previous ones end.
        previousSecretHash: null,
        previousSecretExpires: null,
        previousSigningSecretSealed: null,
        previousSigningSecretExpires: null,
        redirectUris: c.redirectUris,
        defaultRedirectUri: c.defaultRedirectUri,
        fields: c.fields,
        css: c.css,
        termsCss: c.termsCss,
        grantTypes: c.grantTypes,
        accessTokenLifetime: c.accessTokenLifetime,
        autoApprove: c.autoApprove,
        enableSso: c.enableSso,
        requireSecondFactor: c.requireSecondFactor,
        publicClient: c.public,
        unregisteredPayments: c.unregisteredPayments,
        universalDataAccess: c.universalDataAccess,
        admin: c.admin,
        ipAllowList: c.ipWhitelist,
        rateLimit: c.rateLimit,
        jwt: c.jwt,
        resources: c.resources,
        apiEndpoints: c.apiEndpoints,
        idTokenSignedResponseAlg: c.idTokenSignedResponseAlg,
        accessTokenSignedResponseAlg: c.accessTokenSignedResponseAlg,
        logoUri: c.logoUri,
        clientUri: c.clientUri,
        postLogoutRedirectUris: c.postLogoutRedirectUris,
        backchannelLogoutUri: c.backchannelLogoutUri,
        backchannelLogoutSessionRequired: c.backchannelLogoutSessionRequired,
        refreshTokenRotation: c.refreshTokenRotation,
        callbackUrl: c.callbackUrl,
        tokenEndpointAuthMethod: c.tokenEndpointAuthMethod,
        scope: c.scope,
        updated: sql`unixepoch()`,
      }),
      // A client that moves to another merchant takes its users' connections along.
      db.update(s.userClients).set({ merchantId: c.merchantId }).where(eq(s.userClients.clientId, c.id)),
    );
  }

  for (const u of file.users) {
    const emails = withPrimary(u.emails, u.email, u.emailVerified !== undefined, "other");
    const phoneNumbers = withPrimary(u.phoneNumbers, u.phoneNumber, u.phoneNumberVerified !== undefined, "mobile");
    statements.push(
      upsert(s.users, s.users.id, {
        id: u.userId,
        legacyId: u.id ?? null,
        uuid: u.uuid,
        ...(u.password === undefined ? {} : { passwordHash: await hashPassword(u.password) }),
        status: u.status,
        email: u.email ?? emails.find((e) => e.primary)?.value ?? null,
        emailVerified: u.emailVerified ?? null,
        phoneNumber: u.phoneNumber ?? phoneNumbers.find((p) => p.primary)?.value ?? null,
        phoneNumberVerified: u.phoneNumberVerified ?? null,
        givenName: u.name.givenName ?? null,
        familyName: u.name.familyName ?? null,
        formattedName: u.name.formatted ?? null,
        displayName: u.displayName ?? null,
        preferredUsername: u.preferredUsername ?? null,
        url: u.url ?? null,
        photo: u.photo ?? null,
        gender: u.gender,
        birthday: u.birthday,
        locale: u.locale ?? null,
        utcOffset: u.utcOffset ?? null,
        verified: u.verified ?? u.emailVerified ?? u.phoneNumberVerified ?? null,
        tracking: u.tracking,
        published: u.published,
        updated: u.updated,
        lastLoggedIn: u.lastLoggedIn ?? null,
        lastAuthenticated: u.lastAuthenticated ?? null,
        imported: u.imported ?? sql`unixepoch()`,
        migrated: u.migrated ?? null,
        familyNameKey: searchKeyOrNull(u.name.familyName),
        givenNameKey: searchKeyOrNull(u.name.givenName),
        displayNameKey: searchKeyOrNull(u.displayName),
        preferredUsernameKey: searchKeyOrNull(u.preferredUsername),
      }),
      db.delete(s.userEmails).where(eq(s.userEmails.userId, u.userId)),
      db.delete(s.userPhoneNumbers).where(eq(s.userPhoneNumbers.userId, u.userId)),
      db.delete(s.userAddresses).where(eq(s.userAddresses.userId, u.userId)),
      db.delete(s.userAccounts).where(eq(s.userAccounts.userId, u.userId)),
    );
  }

  // Inserted only after every user's old rows are gone, so an address may move between users.
  for (const u of file.users) {
    const userId = u.userId;
    for (const e of withPrimary(u.emails, u.email, u.emailVerified !== undefined, "other")) {
      statements.push(db.insert(s.userEmails).values({ userId, ...e }));
    }
    for (const p of withPrimary(u.phoneNumbers, u.phoneNumber, u.phoneNumberVerified !== undefined, "mobile")) {
      statements.push(db.insert(s.userPhoneNumbers).values({ userId, ...p }));
    }
    const addresses = [
      ...Object.entries(u.addresses).map(([type, a]) => addressRow(userId, type, a)),
      ...u.currentLocation.map((a) => addressRow(userId, CURRENT_LOCATION, a)),
    ];
    for (const a of addresses) statements.push(db.insert(s.userAddresses).values(a));
    for (const a of u.accounts) {
      statements.push(
        db
          .insert(s.userAccounts)
          .values({ userId, domain: a.domain, accountUserId: a.userId ?? null, username: a.username ?? null }),
      );
    }
    for (const clientId of u.clients) {
      statements.push(
        db
          .insert(s.userClients)
          .values({ clientId, userId, merchantId: sql`(SELECT merchant_id FROM clients WHERE id = ${clientId})` })
          .onConflictDoNothing(),
      );
    }
  }

  for (const p of file.products) {
    statements.push(
      upsert(s.products, s.products.id, {
        id: p.productId,
        parentProductId: p.parentProductId ?? null,
        clientId: p.clientId,
        type: p.type,
        bundle: p.bundle,
        code: p.code ?? null,
        name: p.name,
        description: p.description ?? null,
        url: p.url ?? null,
        price: p.price,
        vat: p.vat,
        currency: p.currency,
        paymentOptions: p.paymentOptions,
        quantityLimit: p.quantityLimit ?? null,
        quantityCount: p.quantityCount,
        saleStart: p.saleStart ?? null,
        saleStop: p.saleStop ?? null,
        availableStart: p.availableStart ?? null,
        availableStop: p.availableStop ?? null,
        subscriptionPeriod: p.subscriptionPeriod ?? null,
        subscriptionRenewPrice: p.subscriptionRenewPrice ?? null,
        subscriptionRenewPeriod: p.subscriptionRenewPeriod ?? null,
        subscriptionAutoRenew: p.subscriptionAutoRenew,
        subscriptionAutoRenewLockPeriod: p.subscriptionAutoRenewLockPeriod ?? null,
        subscriptionAutoRenewDisabled: p.subscriptionAutoRenewDisabled,
        subscriptionGracePeriod: p.subscriptionGracePeriod ?? null,
        subscriptionEmailReceiptLimit: p.subscriptionEmailReceiptLimit ?? null,
        subscriptionFinalEndDate: p.subscriptionFinalEndDate ?? null,
        allowMultiSales: p.allowMultiSales,
        status: p.status,
        purchaseUri: p.purchaseUri ?? null,
        changedBy: p.changedBy ?? null,
        changed: p.changed ?? p.updated ?? p.created,
        createdBy: p.createdBy ?? null,
        created: p.created,
      }),
    );
  }

  for (const d of file.digitalContents) {
    statements.push(
      upsert(s.digitalContents, s.digitalContents.id, {
        id: d.userProductId,
        productId: d.productId,
        parentProductId: d.parentProductId ?? null,
        clientId: d.clientId,
        userId: d.userId,
        orderId: d.orderId ?? null,
        status: d.status,
        count: d.count,
        bundleId: d.bundleId ?? null,
        statusMsg: d.statusMsg ?? null,
        created: d.created,
        updated: d.updated,
      }),
    );
  }

  for (const m of file.mails) {
    const mailId = sql`(SELECT id FROM mails WHERE token = ${m.token})`;
    statements.push(
      upsert(s.mails, s.mails.token, {
        userId: m.userId,
        clientId: m.clientId ?? null,
        template: m.template,
        senderName: m.senderName ?? null,
        senderEmail: m.senderEmail,
        userName: m.userName ?? null,
        userEmail: m.userEmail,
        created: m.created,
        token: m.token,
      }),
      db.delete(s.mailEvents).where(eq(s.mailEvents.mailId, mailId)),
      ...m.events.map((e) => db.insert(s.mailEvents).values({ mailId, event: e.event, timestamp: e.timestamp })),
    );
  }

  return statements;
}

/** The contact list with the primary value in it (added when only given as `email`/`phoneNumber`). */
function withPrimary(
  list: User["emails"],
  primary: string | undefined,
  verified: boolean,
  type: string,
): User["emails"] {
  if (primary === undefined) return list;
  if (list.some((c) => c.value === primary)) return list.map((c) => ({ ...c, primary: c.value === primary }));
  return [{ value: primary, type, primary: true, verified }, ...list.map((c) => ({ ...c, primary: false }))];
}

function addressRow(userId: number, type: string, a: Address): typeof s.userAddresses.$inferInsert {
  return {
    userId,
    type,
    formatted: a.formatted ?? null,
    streetAddress: a.streetAddress ?? null,
    postalCode: a.postalCode ?? null,
    locality: a.locality ?? null,
    region: a.region ?? null,
    country: a.country ?? null,
  };
}
