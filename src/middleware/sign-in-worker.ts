/**
 * The edge Worker's half of the split (docs/edge.md "The sign-in Worker"): a request of the
 * sign-in side (/oauth/*, and SPiD's browser paths /flow/* and /logout, which run the same flows)
 * goes, whole, to the sign-in Worker placed next to the D1 primary (SIGN_IN), so that a caller far
 * from the primary waits one round trip for it instead of one per storage call. What needs no
 * primary stays where the caller is: the key set and the `client_credentials` grant (its client is
 * in the isolate's cache). Without the binding (the sign-in Worker itself, local development, the
 * tests) nothing moves.
 */
import type { HonoRequest } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../env";
import { isForm } from "../http/media-type";
import { unavailable } from "../platform/calls";

/** The sign-in side's paths, mounted in app.ts before anything reads storage. */
export const SIGN_IN_PATHS = ["/oauth/*", "/flow/*", "/logout"];

/** Paths of the sign-in side answered at the edge. */
const EDGE_PATHS = new Set(["/oauth/jwks"]);

export const signInWorker = createMiddleware<AppEnv>(async (c, next) => {
  const signIn = c.env.SIGN_IN;
  if (signIn === undefined || !(await needsPrimary(c.req))) return next();
  const { method, url, headers } = c.req.raw;
  // The body was read and bounded already (readRequest); the copy carries it. `manual`: a redirect
  // (a code, a sign-in page) is the browser's to follow, never this fetch's.
  const forwarded = new Request(url, {
    method,
    headers,
    body: method === "GET" || method === "HEAD" ? null : await c.req.arrayBuffer(),
    redirect: "manual",
  });
  let answer: Response;
  try {
    answer = await signIn.fetch(forwarded);
  } catch (err) {
    // The sign-in Worker answers every error of its own; a rejection is the platform's. Never
    // repeated: the first attempt may have spent a code or rotated a token before its answer was lost.
    throw unavailable("Sign-in Worker", `${method} ${c.req.path}`, "unrepeatable", 1, err);
  }
  // Its own copy: the middleware before this one adds headers, and a fetched answer's are immutable.
  return new Response(answer.body, answer);
});

async function needsPrimary(request: HonoRequest): Promise<boolean> {
  if (EDGE_PATHS.has(request.path)) return false;
  // Only a POST's form was read (readRequest); anything else at the token endpoint is refused there.
  if (request.path !== "/oauth/token" || request.method !== "POST" || !isForm(request.header("Content-Type"))) {
    return true;
  }
  return (await request.formData()).get("grant_type") !== "client_credentials";
}
