/**
 * The request mix: which request each connection sends next. All kinds run at once, interleaved
 * by weight; API calls spread over the clients, wrong passwords over their own users.
 */
import {
  FIRST_USER_ID,
  FORM,
  loadUserEmail,
  MAX_WRONG_PER_ACCOUNT,
  PASSWORD,
  REDIRECT_URI,
  RIGHT_USERS,
  WRONG_PASSWORD,
  WRONG_USERS,
} from "./plan";
import type { LoadClient } from "./setup";

export type Kind = "token" | "clients" | "me" | "users" | "devices" | "password" | "password, wrong";
export const KINDS: Kind[] = ["token", "clients", "me", "users", "devices", "password", "password, wrong"];
export const API_KINDS = new Set<Kind>(["clients", "me", "users", "devices"]);

/**
 * Per 20 requests. A password grant costs the Worker a PBKDF2 of 100,000 iterations (tens of ms
 * of CPU on this machine, during which its isolate serves nothing else), so it is one request in
 * 20; one password grant in five has a wrong password.
 */
const WEIGHTS: [Kind | "password grant", number][] = [
  ["token", 4],
  ["clients", 4],
  ["me", 4],
  ["devices", 4],
  ["users", 3],
  ["password grant", 1],
];
/** API calls go to the big client twice as often as to each limited one. */
const API_CLIENT_ORDER = [0, 1, 0, 2];
const PLATFORMS = ["iPhone", "iPad", "Android"] as const;

export type Item = {
  kind: Kind | "drain";
  client: LoadClient | null;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
  userId?: number;
  /** For a wrong password: the throttle's account in the client's object. */
  account?: string;
};

export class RequestMix {
  /** Once set, every request is a GET /api/2/status, which nothing counts. */
  draining = false;
  /** Wrong passwords sent as right ones: the wrong-password users ran out. */
  wrongPoolExhausted = 0;
  private readonly pattern = interleave(WEIGHTS);
  private readonly counters = new Map<string, number>();
  private sequence = 0;
  private passwordGrants = 0;
  private wrongPasswords = 0;
  private deviceCount = 0;

  constructor(private readonly clients: LoadClient[]) {}

  next(): Item {
    if (this.draining) return { kind: "drain", client: null, method: "GET", path: "/api/2/status", headers: {} };
    const slot = this.pattern[this.sequence++ % this.pattern.length]!;
    if (slot === "token") return this.tokenItem();
    if (slot === "password grant") return this.passwordGrantItem();
    return this.apiItem(slot);
  }

  private tokenItem(): Item {
    const client = this.clients[this.count("token") % this.clients.length]!;
    return {
      kind: "token",
      client,
      method: "POST",
      path: "/oauth/token",
      headers: { Authorization: client.basic, "Content-Type": FORM },
      body: "grant_type=client_credentials",
    };
  }

  private passwordGrantItem(): Item {
    const n = this.passwordGrants++;
    let wrongIndex = n % 5 === 4 ? this.wrongPasswords : -1;
    if (wrongIndex >= WRONG_USERS * MAX_WRONG_PER_ACCOUNT) {
      this.wrongPoolExhausted += 1;
      wrongIndex = -1;
    }
    if (wrongIndex >= 0) {
      this.wrongPasswords += 1;
      const user = Math.floor(wrongIndex / MAX_WRONG_PER_ACCOUNT);
      const userId = FIRST_USER_ID + RIGHT_USERS + user;
      // Every wrong password of an account goes to the same client: the throttle counts per client.
      const client = this.clients[user % this.clients.length]!;
      return passwordItem("password, wrong", client, userId, WRONG_PASSWORD, `user:${userId}`);
    }
    const client = this.clients[this.count("password") % this.clients.length]!;
    const userId = FIRST_USER_ID + (this.count("right user") % RIGHT_USERS);
    return passwordItem("password", client, userId, PASSWORD);
  }

  private apiItem(slot: Kind): Item {
    const client = this.clients[API_CLIENT_ORDER[this.count(`api ${slot}`) % API_CLIENT_ORDER.length]!]!;
    const server = { Authorization: `Bearer ${client.serverToken}` };
    if (slot === "clients") return { kind: slot, client, method: "GET", path: "/api/2/clients", headers: server };
    if (slot === "users") return { kind: slot, client, method: "GET", path: "/api/2/users?limit=10", headers: server };
    const user = client.userTokens[this.count(`user ${client.id}`) % client.userTokens.length]!;
    const bearer = { Authorization: `Bearer ${user.token}` };
    if (slot === "me")
      return { kind: slot, client, method: "GET", path: "/api/2/me", headers: bearer, userId: user.userId };
    const n = this.deviceCount++;
    return {
      kind: "devices",
      client,
      method: "POST",
      path: "/api/2/devices",
      headers: { ...bearer, "Content-Type": FORM },
      body: new URLSearchParams({
        deviceId: `load-device-${n}`,
        platform: PLATFORMS[n % PLATFORMS.length]!,
        applicationName: "Load test",
      }).toString(),
      userId: user.userId,
    };
  }

  /** How many times `key` was asked for before. */
  private count(key: string): number {
    const n = this.counters.get(key) ?? 0;
    this.counters.set(key, n + 1);
    return n;
  }
}

function passwordItem(kind: Kind, client: LoadClient, userId: number, password: string, account?: string): Item {
  return {
    kind,
    client,
    method: "POST",
    path: "/oauth/token",
    headers: { Authorization: client.basic, "Content-Type": FORM },
    body: new URLSearchParams({
      grant_type: "password",
      username: loadUserEmail(userId),
      password,
      redirect_uri: REDIRECT_URI,
    }).toString(),
    userId,
    ...(account && { account }),
  };
}

/** The kinds in proportion to their weights, spread evenly (smooth weighted round robin). */
function interleave<T>(weights: [T, number][]): T[] {
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  const current = weights.map(() => 0);
  const order: T[] = [];
  for (let i = 0; i < total; i++) {
    let best = 0;
    for (let k = 0; k < weights.length; k++) {
      current[k]! += weights[k]![1];
      if (current[k]! > current[best]!) best = k;
    }
    current[best]! -= total;
    order.push(weights[best]![0]);
  }
  return order;
}
