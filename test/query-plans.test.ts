/**
 * The query plans of list pages: every accepted filter, criterion and sort is served by an index
 * that starts with the client id, so a page reads about as many rows as it shows. SQLite plans
 * without table statistics here as on D1, so the plans do not depend on how much data there is.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client";
import { type DigitalContentSearch, searchDigitalContents } from "../src/db/queries/digital-contents";
import { type ProductSearch, searchProducts } from "../src/db/queries/products";

const db = openDatabase(env.DB);

async function plan(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string> {
  const { sql, params } = query.toSQL();
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail).join("\n");
}

const page = { since: null, until: null, limit: 100, offset: 0 } as const;
const products = (search: Partial<ProductSearch>) =>
  searchProducts(db, {
    clientId: "c",
    statuses: [0, 1, 2, 3],
    types: null,
    timeColumn: "created",
    sort: [{ property: "productId", direction: "asc" }],
    ...page,
    ...search,
  });
const contents = (search: Partial<DigitalContentSearch>) =>
  searchDigitalContents(db, {
    clientId: "c",
    statuses: [0, 1],
    timeColumn: "created",
    sort: [{ property: "userProductId", direction: "asc" }],
    ...page,
    ...search,
  });

describe("product pages", () => {
  it.each<[string, Partial<ProductSearch>, RegExp]>([
    ["the default order", {}, /USING INDEX products_client_idx \(client_id=\?\)$/],
    ["several names", { names: ["a", "b"] }, /USING INDEX products_client_name_idx/],
    ["several codes", { codes: ["a", "b"] }, /USING INDEX products_client_code_idx/],
    ["several prices", { prices: [1, 2] }, /USING INDEX products_client_price_idx/],
    ["parent products", { parentProductIds: [1, 2] }, /USING INDEX products_client_parent_idx/],
    ["product ids", { productIds: [1, 2] }, /USING INTEGER PRIMARY KEY|USING INDEX products_client/],
    [
      "a time window in time order",
      { since: 0, until: 10, sort: [{ property: "created", direction: "asc" }] },
      /USING INDEX products_client_created_idx/,
    ],
    [
      "recent changes, newest first",
      { timeColumn: "changed", since: 0, sort: [{ property: "changed", direction: "desc" }] },
      /USING INDEX products_client_changed_idx/,
    ],
  ])("%s use an index of the client's", async (_, search, index) => {
    const detail = await plan(products(search));
    expect(detail).toMatch(index);
    expect(detail).not.toMatch(/\bSCAN products\b/);
  });

  it("sorts a page in index order, with no sort of the whole set", async () => {
    expect(await plan(products({}))).not.toMatch(/TEMP B-TREE/);
    expect(
      await plan(products({ timeColumn: "changed", sort: [{ property: "changed", direction: "desc" }] })),
    ).not.toMatch(/TEMP B-TREE/);
  });
});

describe("digital content pages", () => {
  it.each<[string, Partial<DigitalContentSearch>, RegExp]>([
    ["the default order", {}, /USING INDEX digital_contents_client_idx \(client_id=\?\)$/],
    ["several users", { userIds: [1, 2] }, /USING INDEX digital_contents_client_user_idx/],
    ["several products", { productIds: [1, 2] }, /USING INDEX digital_contents_client_product_idx/],
    ["a product family", { familyProductIds: [1, 2] }, /USING (COVERING )?INDEX products_client_parent_idx/],
  ])("%s use an index of the client's", async (_, search, index) => {
    const detail = await plan(contents(search));
    expect(detail).toMatch(index);
    expect(detail).not.toMatch(/\bSCAN digital_contents\b/);
  });
});
