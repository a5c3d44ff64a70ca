/**
 * Verifies a signed response of the Account and Commerce API (spec "Response signing", steps
 * 1-4) and returns its payload. Copy it as it is: it needs only WebCrypto and atob (Node 20+,
 * Deno, Workers, a browser). Remove the types for plain JavaScript. Verify where the signing
 * secret may live: a back end. The secret also signs the client's JWT assertions, so it must never
 * be shipped to a browser or an app.
 *
 *   const body = await (await fetch(`${BASE}/api/2/me?signed=1`, { headers })).json();
 *   const me = await verifySignedResponse(body, SIGNING_SECRET);
 */
export async function verifySignedResponse(
  container: { data: string; algorithm: string; sig: string },
  signingSecret: string,
): Promise<unknown> {
  if (container.algorithm !== "HMAC-SHA256") throw new Error(`Unsupported algorithm ${container.algorithm}`);
  // Step 2: Base64 URL to standard Base64, then decode.
  const decode = (value: string) =>
    Uint8Array.from(atob(value.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(signingSecret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["verify"],
  );
  // Step 3: the HMAC of `data` exactly as received; `verify` compares in constant time.
  if (!(await crypto.subtle.verify("HMAC", key, decode(container.sig), encoder.encode(container.data)))) {
    throw new Error("Signature mismatch: the data cannot be trusted");
  }
  // Step 4: the payload is the decoded `data`, parsed as JSON.
  return JSON.parse(new TextDecoder().decode(decode(container.data)));
}
