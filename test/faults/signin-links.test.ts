/**
 * The sign-in link flows under a fault of each storage call they make, before and after the call
 * did its work (src/oauth/signin-links.ts): asking for a link (POST /api/2/signin; the login
 * page's "e-mail me a link", and the queue's consumer that makes its link) and using one (GET and
 * POST /oauth/signin). Whatever the first answer, the retry works at once, one link was mailed
 * and recorded, and it signs in; only the mail's record failing after the mail went out leaves the
 * mail out of the history (D1 writes are tried once). An outage or a stall of any binding is
 * answered as usual or 503 with Retry-After, in time, never 500.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { openDatabase } from "../../src/db/client";
import { mailEvents, mails, signinRequests, users } from "../../src/db/schema";
import { CALL_DEADLINE_MS } from "../../src/platform/calls";
import { emailLookupKey } from "../../src/schemas/email-address";
import { Browser, expectPage, redirectParameters } from "../helpers/browser";
import { type BindingName, type Fault, faultyEnv, fetchWith } from "../helpers/faults";
import { basicAuth, bearer, call, postForm, serverToken } from "../helpers/http";
import { consumeLinkRequests, LINK_CALLBACK as CALLBACK, linkRequest } from "../helpers/queues";
import { mailbox } from "../helpers/mailbox";
import { createClient, createUser } from "../helpers/seed";

/** The deadline, and room for the Worker's own work beside the other stalled requests at once. */
const ANSWERED_WITHIN_MS = CALL_DEADLINE_MS + 1_500;
const UNAVAILABLE = "We could not finish this just now";
const BINDINGS: BindingName[] = ["DB", "CODES", "RATE_LIMITER", "LINK_REQUESTS"];

type Call = { binding: BindingName; n: number; what: string };

/** The queue consumer's storage calls for one request of the login page, in order. */
const CONSUMER_CALLS: Call[] = [
  { binding: "DB", n: 1, what: "the client's read" },
  { binding: "DB", n: 2, what: "the address's owner's read" },
  { binding: "CODES", n: 1, what: "the link's record" },
  { binding: "DB", n: 3, what: "the row that makes the link live" },
  { binding: "DB", n: 4, what: "the mail's record, marking the row mailed" },
];

/** POST /api/2/signin's storage calls, in order, for a client no isolate has served yet: the consumer's after admission. */
const ASKING_CALLS: Call[] = [
  { binding: "RATE_LIMITER", n: 1, what: "the client's request window" },
  ...CONSUMER_CALLS,
];

/** The login page's "e-mail me a link": its storage calls, in order. */
const PAGE_CALLS: Call[] = [
  { binding: "DB", n: 1, what: "the client's read" },
  { binding: "RATE_LIMITER", n: 1, what: "the network's count of links" },
  { binding: "LINK_REQUESTS", n: 1, what: "the request's message" },
];

/** POST /oauth/signin's storage calls, in order. */
const USING_CALLS: Call[] = [
  { binding: "CODES", n: 1, what: "the link's record" },
  { binding: "DB", n: 1, what: "the link's row" },
  { binding: "DB", n: 2, what: "the client's read" },
  { binding: "DB", n: 3, what: "the address's owner's read" },
  { binding: "DB", n: 4, what: "the claim of the row" },
  { binding: "DB", n: 5, what: "the user's batch" },
  { binding: "DB", n: 6, what: "the session's batch" },
  { binding: "DB", n: 7, what: "the authorization request's client" },
  { binding: "CODES", n: 2, what: "the authorization code" },
  { binding: "DB", n: 8, what: "the claim dropped, after the answer" },
];

/**
 * The mail's record failing before it landed, once the mail is out: answered as sent, the mail
 * missing from the history and the row left unmailed (tested on its own below).
 */
const RECORD_LOST = { binding: "DB", n: 4, applied: false } as const;
const isRecordLost = (c: { binding: BindingName; n: number; applied: boolean }) =>
  c.binding === RECORD_LOST.binding && c.n === RECORD_LOST.n && c.applied === RECORD_LOST.applied;

const faults = (calls: Call[]) =>
  calls.flatMap((c) =>
    [false, true].map((applied) => ({
      ...c,
      applied,
      name: `${c.binding} call ${c.n} (${c.what}) failing ${applied ? "after it landed" : "before it did anything"}`,
    })),
  );

let nextUser = 15_000 + Math.floor(Math.random() * 50) * 40;
let mail: ReturnType<typeof mailbox>;
let loggedErrors: MockInstance<typeof console.error>;

beforeEach(() => {
  mail = mailbox();
  // Each fault given up is logged; the layer's log is tested in test/platform-layer.test.ts.
  loggedErrors = vi.spyOn(console, "error").mockImplementation(() => {});
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

type Shop = { id: string; secret: string; token: string };

/** A fresh client, so that no isolate holds its rate limiter's lease, and its server token. */
async function shop(): Promise<Shop> {
  const client = await createClient({ grantTypes: ["client_credentials", "authorization_code"], autoApprove: true });
  return { ...client, token: await serverToken(client) };
}

const newAddress = () => `link-${crypto.randomUUID()}@example.org`;

function askForLink(shop: Shop, email: string): RequestInit {
  return {
    method: "POST",
    headers: { ...bearer(shop.token), "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ identifier: email, redirectUri: CALLBACK }),
  };
}

/** The requests of a browser, through an env whose bindings fail as told. */
function through(browser: Browser, faulty: ReturnType<typeof faultyEnv>): Browser {
  return browser.via((path, init) => fetchWith(faulty.env, path, init));
}

/** How many mails were printed to `email`. */
function mailsTo(email: string): number {
  return mail.printed().split(`mail to ${email}:`).length - 1;
}

/** The events of the mails recorded to `email`. */
async function recordedMails(email: string): Promise<string[]> {
  const rows = await openDatabase(env.DB)
    .select({ event: mailEvents.event })
    .from(mails)
    .innerJoin(mailEvents, eq(mailEvents.mailId, mails.id))
    .where(eq(mails.userEmail, email))
    .all();
  return rows.map((row) => row.event);
}

/** What was logged as an error, but for the platform layer's own line of each fault it gave up. */
function errorsBesideFaults(): string[] {
  return loggedErrors.mock.calls
    .map((args) => args.map(String).join(" "))
    .filter((line) => !line.startsWith("platform fault:"));
}

function expectUnavailable(res: Response & { elapsedMs?: number }, context: string) {
  expect(res.status, context).toBe(503);
  expect(Number(res.headers.get("Retry-After")), context).toBeGreaterThanOrEqual(1);
  if (res.elapsedMs !== undefined) expect(res.elapsedMs, context).toBeLessThan(ANSWERED_WITHIN_MS);
}

/** The browser was sent to the callback with a code, and the code is good at the token endpoint. */
async function expectCode(shop: Shop, res: Response, context: string) {
  expect(res.status, context).toBe(303);
  const { base, params } = redirectParameters(res);
  expect(base).toBe(CALLBACK);
  const tokens = await postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code: params.get("code")!, redirect_uri: CALLBACK },
    basicAuth(shop.id, shop.secret),
  );
  expect(tokens.status, context).toBe(200);
  await tokens.body?.cancel();
}

/** Opens the link in a new browser and confirms it: it signs in. */
async function expectSignsIn(shop: Shop, link: string, context: string) {
  const browser = new Browser();
  const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
  await expectCode(shop, await browser.submit(page, {}), context);
}

/**
 * One link, mailed to `email`, recorded as sent, its row marked mailed (a new request within the
 * minute is too soon), and it signs in.
 */
async function expectOneLinkMailed(shop: Shop, email: string, context: string) {
  expect(mailsTo(email), context).toBe(1);
  expect(await recordedMails(email), context).toEqual(["sent"]);
  const again = await call("/api/2/signin", askForLink(shop, email));
  expect(again.status, context).toBe(409);
  await again.body?.cancel();
  await expectSignsIn(shop, await mail.link(email), context);
}

describe("POST /api/2/signin", () => {
  it("makes the calls the cases below fail", async () => {
    const faulty = faultyEnv({});
    const res = await fetchWith(faulty.env, "/api/2/signin", askForLink(await shop(), newAddress()));
    expect(res.status).toBe(201);
    for (const binding of BINDINGS) {
      expect(faulty.counts[binding].calls, binding).toBe(ASKING_CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(faults(ASKING_CALLS).filter((c) => !isRecordLost(c)))(
    "$name: answered 201 with the mail out, or 503 with none, and the retry works at once",
    async ({ binding, n, applied, name }) => {
      const s = await shop();
      const email = newAddress();
      const faulty = faultyEnv({ [binding]: { kind: "nth", n, applied } });
      const first = await fetchWith(faulty.env, "/api/2/signin", askForLink(s, email));
      expect(faulty.counts[binding].failed, name).toBe(1);
      if (first.status === 201) {
        expect(mailsTo(email), name).toBe(1);
      } else {
        expectUnavailable(first, name);
        expect(mailsTo(email), name).toBe(0);
        const retry = await call("/api/2/signin", askForLink(s, email));
        expect(retry.status, name).toBe(201);
      }
      await expectOneLinkMailed(s, email, name);
    },
  );

  it("the mail's record failing before it landed: 201 with the mail out and its link good, logged once; the next request is held only while a mail could be going out", async () => {
    const s = await shop();
    const email = newAddress();
    const faulty = faultyEnv({ DB: { kind: "nth", n: RECORD_LOST.n, applied: RECORD_LOST.applied } });
    const first = await fetchWith(faulty.env, "/api/2/signin", askForLink(s, email));
    expect(first.status).toBe(201);
    expect(faulty.counts.DB).toEqual({ calls: 4, failed: 1 });
    expect(mailsTo(email)).toBe(1);
    expect(await recordedMails(email)).toEqual([]);
    // The fault was logged by the platform layer; the mailer says only what it cost.
    expect(errorsBesideFaults()).toEqual(["mail signin sent but not recorded"]);
    // Not marked mailed, the row holds the next request back as a link being mailed, not for the minute.
    expectUnavailable(await call("/api/2/signin", askForLink(s, email)), "the next request");
    expect(mailsTo(email)).toBe(1);
    await expectSignsIn(s, await mail.link(email), "the mailed link");
  });

  it("a stalled row write is answered 503 within one deadline: its row is withdrawn in the background", async () => {
    const s = await shop();
    const email = newAddress();
    // The row's write hangs, and so does every D1 call after it: the withdrawal too.
    const faulty = faultyEnv({ DB: { kind: "stall", from: 3 } });
    const first = await fetchWith(faulty.env, "/api/2/signin", askForLink(s, email));
    expectUnavailable(first, "the stalled write");
    expect(faulty.counts.DB).toEqual({ calls: 4, failed: 2 });
    expect(mailsTo(email)).toBe(0);
    expect((await call("/api/2/signin", askForLink(s, email))).status).toBe(201);
    await expectOneLinkMailed(s, email, "the retry");
  }, 15_000);

  it("a mail the provider refused, whose record fails too: 503, its row withdrawn, and the retry is not held back", async () => {
    const s = await shop();
    const email = newAddress();
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      return url.startsWith("https://mail.provider.test/")
        ? new Response("quota", { status: 500 })
        : realFetch(input, init);
    });
    const withProvider = { ...env, MAIL_API_URL: "https://mail.provider.test/send" };
    const faulty = faultyEnv({ DB: { kind: "nth", n: 4, applied: false } }, withProvider);
    expectUnavailable(await fetchWith(faulty.env, "/api/2/signin", askForLink(s, email)), "the failed record");
    expect(faulty.counts.DB).toEqual({ calls: 5, failed: 1 });
    expect(await recordedMails(email)).toEqual([]);
    // Asked again with the console mailer: not held back as a link being mailed.
    expect((await call("/api/2/signin", askForLink(s, email))).status).toBe(201);
    await expectOneLinkMailed(s, email, "the retry");
  });
});

describe("the login page's link", () => {
  async function loginPage(shop: Shop) {
    const browser = new Browser();
    const query = new URLSearchParams({ client_id: shop.id, redirect_uri: CALLBACK, response_type: "code" });
    const page = await expectPage(await browser.get(`/oauth/authorize?${query}`), 200, "Sign in");
    return { browser, page };
  }

  it.each(faults(PAGE_CALLS))(
    "$name: the page says check your e-mail, or try again and then does; one link comes",
    async ({ binding, n, applied, name }) => {
      const s = await shop();
      const email = newAddress();
      const { browser, page } = await loginPage(s);
      const faulty = faultyEnv({ [binding]: { kind: "nth", n, applied } });
      const first = await through(browser, faulty).submit(page, { action: "link", email });
      expect(faulty.counts[binding].failed, name).toBe(1);
      if (first.status !== 200) {
        await expectPage(first, 503, UNAVAILABLE);
        expectUnavailable(first, name);
        const retry = await browser.submit(page, { action: "link", email });
        await expectPage(retry, 200, "Check your e-mail");
      }
      await expectSignsIn(s, await mail.link(email), name);
      expect(await recordedMails(email), name).toEqual(["sent"]);
    },
  );

  // The queue names the status's text only: load is 503 and not repeated, a malformed send a bug.
  it.each([
    ["Too Many Requests", 503, 1],
    ["Payload Too Large", 500, 1],
  ] as const)(
    "the queue refusing the page's send with '%s': a %i after one call, never repeated",
    async (text, status, calls) => {
      const s = await shop();
      const { browser, page } = await loginPage(s);
      const faulty = faultyEnv({
        LINK_REQUESTS: { kind: "outage", error: () => new Error(`Queue send failed: ${text}`) },
      });
      const res = await through(browser, faulty).submit(page, { action: "link", email: newAddress() });
      expect(res.status).toBe(status);
      expect(faulty.counts.LINK_REQUESTS.calls).toBe(calls);
      if (status === 503) expect(res.headers.get("Retry-After")).toBe("5");
      await res.body?.cancel();
    },
  );
});

describe("the queue's consumer", () => {
  it("makes the calls the cases below fail", async () => {
    const s = await shop();
    const faulty = faultyEnv({});
    const result = await consumeLinkRequests([linkRequest(s.id, newAddress())], faulty.env);
    expect(result.acked).toEqual(["m0"]);
    for (const binding of BINDINGS) {
      expect(faulty.counts[binding].calls, binding).toBe(CONSUMER_CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(faults(CONSUMER_CALLS).filter((c) => !isRecordLost(c)))(
    "$name: acknowledged with the mail out, or retried with none; a message delivered again mails nothing more",
    async ({ binding, n, applied, name }) => {
      const s = await shop();
      const email = newAddress();
      const message = linkRequest(s.id, email);
      const faulty = faultyEnv({ [binding]: { kind: "nth", n, applied } });
      const first = await consumeLinkRequests([message], faulty.env);
      expect(faulty.counts[binding].failed, name).toBe(1);
      if (first.acked.length === 1) {
        expect(mailsTo(email), name).toBe(1);
      } else {
        expect(first.retried, name).toEqual(["m0"]);
        expect(mailsTo(email), name).toBe(0);
        expect((await consumeLinkRequests([message])).acked, name).toEqual(["m0"]);
      }
      expect((await consumeLinkRequests([message])).acked, name).toEqual(["m0"]);
      await expectOneLinkMailed(s, email, name);
    },
  );

  it("the mail's record failing before it landed: acknowledged with the mail out; delivered again, held back and mailing nothing more", async () => {
    const s = await shop();
    const email = newAddress();
    const message = linkRequest(s.id, email);
    const faulty = faultyEnv({ DB: { kind: "nth", n: RECORD_LOST.n, applied: RECORD_LOST.applied } });
    expect((await consumeLinkRequests([message], faulty.env)).acked).toEqual(["m0"]);
    expect(mailsTo(email)).toBe(1);
    const again = await consumeLinkRequests([message]);
    expect(again.retried).toEqual(["m0"]);
    expect(again.retryDelays.m0).toBeGreaterThanOrEqual(1);
    expect(mailsTo(email)).toBe(1);
    await expectSignsIn(s, await mail.link(email), "the mailed link");
  });
});

describe("POST /oauth/signin", () => {
  /** A link mailed to a new address, or to a registered user, opened in a browser: its confirmation page. */
  async function openedLink(s: Shop, registered: boolean) {
    const email = registered ? (await createUser(nextUser++, { clients: [s.id] })).email : newAddress();
    expect((await call("/api/2/signin", askForLink(s, email))).status).toBe(201);
    const link = await mail.link(email);
    const browser = new Browser();
    const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
    return { email, link, browser, page };
  }

  const RETRIES = [
    { to: "a new address", registered: false, by: "the page's button" },
    { to: "a new address", registered: false, by: "opening the link again" },
    { to: "a registered user", registered: true, by: "the page's button" },
  ] as const;
  const CASES = faults(USING_CALLS).flatMap((fault) =>
    RETRIES.filter((retry) => fault.binding === "DB" || retry.by === "the page's button").map((retry) => ({
      ...fault,
      ...retry,
    })),
  );

  it("makes the calls the cases below fail", async () => {
    const s = await shop();
    const { browser, page } = await openedLink(s, false);
    const faulty = faultyEnv({});
    await expectCode(s, await through(browser, faulty).submit(page, {}), "clean");
    for (const binding of BINDINGS) {
      expect(faulty.counts[binding].calls, binding).toBe(USING_CALLS.filter((c) => c.binding === binding).length);
    }
  });

  it.each(CASES)(
    "$name, for $to, tried again by $by: signed in, by the first answer or by the retry, once",
    async ({ binding, n, applied, name, registered, by }) => {
      const s = await shop();
      const { email, link, browser, page } = await openedLink(s, registered);
      const faulty = faultyEnv({ [binding]: { kind: "nth", n, applied } });
      const first = await through(browser, faulty).submit(page, {});
      expect(faulty.counts[binding].failed, name).toBe(1);
      if (first.status === 303) {
        await expectCode(s, first, name);
      } else {
        await expectPage(first, 503, UNAVAILABLE);
        expectUnavailable(first, name);
        const again =
          by === "the page's button" ? page : await expectPage(await browser.get(link), 200, "Confirm sign-in");
        await expectCode(s, await browser.submit(again, {}), name);
      }
      // The link was used: no other browser can use it.
      await expectPage(await new Browser().get(link), 410, "This link no longer works");
      const made = await openDatabase(env.DB).select({ id: users.id }).from(users).where(eq(users.email, email)).all();
      expect(made, name).toHaveLength(1);
    },
  );
});

describe("an outage or a stall of a binding", () => {
  type Surface = {
    name: string;
    /** Sets the scene (with the clean env); answers the request to make under the fault, and its normal answer. */
    prepare: () => Promise<{ send: (faulty: ReturnType<typeof faultyEnv>) => Promise<Response>; ok: number }>;
  };

  const SURFACES: Surface[] = [
    {
      name: "POST /api/2/signin",
      prepare: async () => {
        const s = await shop();
        const email = newAddress();
        return { send: (faulty) => fetchWith(faulty.env, "/api/2/signin", askForLink(s, email)), ok: 201 };
      },
    },
    {
      name: "POST /oauth/authorize, action=link",
      prepare: async () => {
        const s = await shop();
        const browser = new Browser();
        const query = new URLSearchParams({ client_id: s.id, redirect_uri: CALLBACK, response_type: "code" });
        const page = await (await browser.get(`/oauth/authorize?${query}`)).text();
        return {
          send: (faulty) => through(browser, faulty).submit(page, { action: "link", email: newAddress() }),
          ok: 200,
        };
      },
    },
    {
      name: "GET /oauth/signin",
      prepare: async () => {
        const s = await shop();
        const email = newAddress();
        await call("/api/2/signin", askForLink(s, email));
        const link = await mail.link(email);
        return { send: (faulty) => through(new Browser(), faulty).get(link), ok: 200 };
      },
    },
    {
      name: "POST /oauth/signin",
      prepare: async () => {
        const s = await shop();
        const email = newAddress();
        await call("/api/2/signin", askForLink(s, email));
        const browser = new Browser();
        const page = await (await browser.get(await mail.link(email))).text();
        return { send: (faulty) => through(browser, faulty).submit(page, {}), ok: 303 };
      },
    },
  ];

  const CASES = SURFACES.flatMap((surface) => BINDINGS.map((binding) => ({ surface, binding })));

  it.each(CASES.map(({ surface, binding }) => [surface.name, binding, surface] as const))(
    "%s, %s out: its normal answer, or 503 with Retry-After in time; once it is back, the same request works",
    async (_, binding, surface) => {
      const { send, ok } = await surface.prepare();
      const faulty = faultyEnv({ [binding]: { kind: "outage" } });
      const res = await send(faulty);
      if (faulty.counts[binding].calls === 0) {
        expect(res.status).toBe(ok);
      } else {
        expectUnavailable(res, `${surface.name}, ${binding}`);
        expect((await send(faultyEnv({}))).status).toBe(ok);
      }
    },
  );

  it("stalling, is given up at the deadline: every surface answers in time, never 500", async () => {
    const prepared = [];
    for (const { surface, binding } of CASES) prepared.push({ surface, binding, ...(await surface.prepare()) });
    const outcomes = await Promise.all(
      prepared.map(async ({ surface, binding, send, ok }) => {
        const faulty = faultyEnv({ [binding]: { kind: "stall" } });
        const started = Date.now();
        const res = await send(faulty);
        await res.body?.cancel();
        const expected = faulty.counts[binding].calls === 0 ? ok : 503;
        const inTime = Date.now() - started < ANSWERED_WITHIN_MS;
        return `${surface.name}, ${binding}: ${res.status === expected ? "as expected" : res.status} ${inTime ? "in time" : "late"}`;
      }),
    );
    expect(outcomes).toEqual(
      prepared.map(({ surface, binding }) => `${surface.name}, ${binding}: as expected in time`),
    );
  }, 60_000);

  it.each(BINDINGS)(
    "the queue's consumer, %s out: retries the request, mailing nothing, or makes it",
    async (binding) => {
      const s = await shop();
      const email = newAddress();
      const faulty = faultyEnv({ [binding]: { kind: "outage" } });
      const result = await consumeLinkRequests([linkRequest(s.id, email)], faulty.env);
      if (faulty.counts[binding].calls === 0) {
        expect(result.acked).toEqual(["m0"]);
        expect(mailsTo(email)).toBe(1);
      } else {
        expect(result.retried).toEqual(["m0"]);
        expect(mailsTo(email)).toBe(0);
      }
    },
  );
});

describe("a link still being mailed", () => {
  /** A row as a request leaves it that died after making its link live and before its mail went out. */
  async function abandonedRequest(email: string, created: number) {
    await openDatabase(env.DB)
      .insert(signinRequests)
      .values({ subject: `email:${emailLookupKey(email)}`, tokenHash: "abandoned", created, expires: created + 300 });
  }

  it("holds back a second request for the same user at the same time: one mail goes out", async () => {
    const s = await shop();
    const email = newAddress();
    const answers = await Promise.all([
      call("/api/2/signin", askForLink(s, email)),
      call("/api/2/signin", askForLink(s, email)),
    ]);
    const statuses = answers.map((res) => res.status).sort();
    expect([
      [201, 409],
      [201, 503],
    ]).toContainEqual(statuses);
    expect(mailsTo(email)).toBe(1);
  });

  it("holds the next request back only while its mail could still be going out, with Retry-After", async () => {
    const s = await shop();
    const email = newAddress();
    const now = Math.floor(Date.now() / 1000);
    await abandonedRequest(email, now);
    vi.useFakeTimers({ toFake: ["Date"], now: now * 1000 });
    const held = await call("/api/2/signin", askForLink(s, email));
    expectUnavailable(held, "held");
    const wait = Number(held.headers.get("Retry-After"));
    expect(wait).toBeLessThanOrEqual(20);
    expect(mailsTo(email)).toBe(0);
    vi.setSystemTime((now + wait) * 1000);
    expect((await call("/api/2/signin", askForLink(s, email))).status).toBe(201);
    await expectOneLinkMailed(s, email, "after the hold");
  });

  it("counts the hold from the row's write: slow calls before it cannot end the hold while the mail may be going out", async () => {
    const s = await shop();
    const email = newAddress();
    const start = Math.floor(Date.now() / 1000);
    vi.useFakeTimers({ toFake: ["Date"], now: start * 1000 });
    // The link's KV record takes 5 s: the row is written that much after the request began.
    const codes = env.CODES;
    const slowCodes = {
      get: codes.get.bind(codes),
      getWithMetadata: codes.getWithMetadata.bind(codes),
      list: codes.list.bind(codes),
      delete: codes.delete.bind(codes),
      put: async (...args: Parameters<KVNamespace["put"]>) => {
        await codes.put(...args);
        vi.setSystemTime(Date.now() + 5_000);
      },
    } as unknown as KVNamespace;
    expect((await fetchWith({ ...env, CODES: slowCodes }, "/api/2/signin", askForLink(s, email))).status).toBe(201);
    const [row] = await openDatabase(env.DB)
      .select({ created: signinRequests.created })
      .from(signinRequests)
      .where(eq(signinRequests.subject, `email:${emailLookupKey(email)}`))
      .all();
    expect(row!.created).toBe(start + 5);
  });

  it("has the queue's consumer try again once the hold is over", async () => {
    const s = await shop();
    const email = newAddress();
    const now = Math.floor(Date.now() / 1000);
    await abandonedRequest(email, now);
    vi.useFakeTimers({ toFake: ["Date"], now: now * 1000 });
    const held = await consumeLinkRequests([linkRequest(s.id, email)]);
    expect(held.acked).toEqual([]);
    expect(held.retried).toEqual(["m0"]);
    const wait = held.retryDelays.m0!;
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(mailsTo(email)).toBe(0);
    vi.setSystemTime((now + wait) * 1000);
    expect((await consumeLinkRequests([linkRequest(s.id, email)])).acked).toEqual(["m0"]);
    expect(mailsTo(email)).toBe(1);
  });
});

describe("a use the platform failed midway", () => {
  it("leaves the link to the browser that used it, until that browser is answered", async () => {
    const s = await shop();
    const email = newAddress();
    await call("/api/2/signin", askForLink(s, email));
    const link = await mail.link(email);
    const browser = new Browser();
    const page = await expectPage(await browser.get(link), 200, "Confirm sign-in");
    // The user's batch fails, after the row was claimed for this browser.
    const fault: Fault = { kind: "nth", n: 5, applied: false };
    await expectPage(await through(browser, faultyEnv({ DB: fault })).submit(page, {}), 503, UNAVAILABLE);

    const other = new Browser();
    await expectPage(await other.get(link), 410, "This link no longer works");
    await expectCode(s, await browser.submit(page, {}), "the retry");
    // Answered: not even this browser can use it again.
    await expectPage(await browser.submit(page, {}), 410, "This link no longer works");
  });
});

describe("the user's batch refused", () => {
  /** A link to a new address, opened in a browser; its use is submitted through `faulty`. */
  async function useWith(s: Shop, email: string, faulty: ReturnType<typeof faultyEnv>) {
    await call("/api/2/signin", askForLink(s, email));
    const browser = new Browser();
    const page = await expectPage(await browser.get(await mail.link(email)), 200, "Confirm sign-in");
    return through(browser, faulty).submit(page, {});
  }

  it("by the address's unique index, as another request of this use made the user first: signed in as that user", async () => {
    const s = await shop();
    const email = newAddress();
    // The batch lands, then is answered as the second request of a double click would be.
    const refused: Fault = {
      kind: "nth",
      n: 5,
      applied: true,
      error: () => new Error("D1_ERROR: UNIQUE constraint failed: user_emails.value: SQLITE_CONSTRAINT"),
    };
    await expectCode(s, await useWith(s, email, faultyEnv({ DB: refused })), "refused as taken");
    const made = await openDatabase(env.DB).select({ id: users.id }).from(users).where(eq(users.email, email)).all();
    expect(made).toHaveLength(1);
  });

  it("by anything else: a bug, answered 500 and logged, never taken for a lost answer", async () => {
    const s = await shop();
    const email = newAddress();
    // Even though the batch landed, and the user is there to be found.
    const bug: Fault = { kind: "nth", n: 5, applied: true, error: () => new Error("D1_ERROR: no such column: x") };
    const res = await useWith(s, email, faultyEnv({ DB: bug }));
    expect(res.status).toBe(500);
    await res.body?.cancel();
    expect(errorsBesideFaults().filter((line) => line.startsWith("unhandled error"))).toHaveLength(1);
  });
});

describe("a double click on the confirmation page", () => {
  it("signs the browser in, never fails it, and makes one user of a new address", async () => {
    const s = await shop();
    const email = newAddress();
    await call("/api/2/signin", askForLink(s, email));
    const browser = new Browser();
    const page = await expectPage(await browser.get(await mail.link(email)), 200, "Confirm sign-in");
    const answers = await Promise.all([browser.submit(page, {}), browser.submit(page, {})]);
    // The second is taken up while the first is under way, or finds the link used once it was answered.
    const signedIn = answers.filter((answer) => answer.status === 303);
    expect(signedIn.length).toBeGreaterThanOrEqual(1);
    for (const answer of signedIn) await expectCode(s, answer, "a request of the double click");
    for (const answer of answers.filter((a) => a.status !== 303)) {
      await expectPage(answer, 410, "This link no longer works");
    }
    const made = await openDatabase(env.DB).select({ id: users.id }).from(users).where(eq(users.email, email)).all();
    expect(made).toHaveLength(1);
  });
});
