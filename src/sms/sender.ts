/**
 * The one way the service sends a text message (a phone number's verification code;
 * docs/management.md "Changing a phone number"), as the mailer sends mail:
 *
 * - With `SMS_API_URL` (and `SMS_API_KEY`) set, the message is posted as JSON to that HTTP SMS API
 *   (`{from, to, text}`, `Authorization: Bearer <key>`); any 2xx is "sent".
 * - Without it, in development (and tests), it is printed to the console.
 * - Without it anywhere else, nothing is sent: a code must never end up in a deployed Worker's logs.
 */
import type { Bindings } from "../env";

/** How long a provider has to answer before the message counts as failed. */
const PROVIDER_TIMEOUT_MS = 10_000;
const SENDER = "Accounts";

/** Sends `text` to `to` (E.164); answers whether it went out, never throws. */
export async function sendText(env: Bindings, to: string, text: string): Promise<boolean> {
  const { SMS_API_URL: url, SMS_API_KEY: key, ENVIRONMENT } = env;
  if (!url) {
    if (ENVIRONMENT !== "development") {
      console.warn("text message not sent: no SMS provider is configured");
      return false;
    }
    console.log(`\n--- text to ${to}: ${text}\n---\n`);
    return true;
  }
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(key && { Authorization: `Bearer ${key}` }) },
      body: JSON.stringify({ from: env.SMS_FROM ?? SENDER, to, text }),
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (!response.ok) console.warn(`text message not sent: the provider answered ${response.status}`);
    return response.ok;
  } catch (err) {
    console.warn(`text message not sent: the provider could not be reached (${(err as Error).name})`);
    return false;
  }
}
