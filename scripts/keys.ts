/**
 * `npm run keys`: fresh secrets for a deployed environment, as the JSON that `npm run secrets`
 * (and `wrangler secret bulk`) takes (docs/operations.md "Deploying staging and production"):
 *
 *   npm run --silent keys > staging-secrets.json && npm run secrets -- staging staging-secrets.json
 *
 * The Worker's secrets only: TOKEN_SIGNING_KEYS (an Ed25519 and an RSA key) and
 * DATA_PROTECTION_KEY. The mail provider's are the operator's own.
 */
import { generateDataProtectionKey, generateSigningKeys } from "./lib/keys";

const secrets = {
  TOKEN_SIGNING_KEYS: await generateSigningKeys(),
  DATA_PROTECTION_KEY: generateDataProtectionKey(),
};
console.log(JSON.stringify(secrets, null, 2));
console.error(
  "Keep DATA_PROTECTION_KEY in your password manager: imports need it, and Cloudflare never shows it again.",
);
