/**
 * A software authenticator for the workers tests: a P-256 passkey made with WebCrypto, its
 * registration (attestation `none`) and its assertions, as a browser would post them. Every field
 * it signs can be changed, to test what the service refuses.
 */
import { base64url } from "jose";

/** The parts of CBOR a registration needs: small maps, integers, byte and text strings. */
function cbor(value: unknown): Uint8Array {
  const head = (major: number, length: number): number[] =>
    length < 24
      ? [(major << 5) | length]
      : length < 256
        ? [(major << 5) | 24, length]
        : [(major << 5) | 25, length >> 8, length & 255];
  if (typeof value === "number") return new Uint8Array(value < 0 ? head(1, -1 - value) : head(0, value));
  if (typeof value === "string") {
    const bytes = new TextEncoder().encode(value);
    return new Uint8Array([...head(3, bytes.length), ...bytes]);
  }
  if (value instanceof Uint8Array) return new Uint8Array([...head(2, value.length), ...value]);
  const entries = value instanceof Map ? [...value] : Object.entries(value as object);
  return new Uint8Array([...head(5, entries.length), ...entries.flatMap(([k, v]) => [...cbor(k), ...cbor(v)])]);
}

const sha256 = async (bytes: Uint8Array) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
const utf8 = (text: string) => new TextEncoder().encode(text);

export type Flags = { userPresent?: boolean; userVerified?: boolean; backupEligible?: boolean; backedUp?: boolean };

/** DER of an ECDSA signature from WebCrypto's r || s. */
function der(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    const trimmed = bytes.slice(start);
    const padded = trimmed[0]! >= 0x80 ? new Uint8Array([0, ...trimmed]) : trimmed;
    return [0x02, padded.length, ...padded];
  };
  const body = [...integer(raw.slice(0, 32)), ...integer(raw.slice(32))];
  return new Uint8Array([0x30, body.length, ...body]);
}

export class SoftwareAuthenticator {
  readonly id = crypto.getRandomValues(new Uint8Array(16));
  counter = 0;

  private constructor(
    private readonly keys: CryptoKeyPair,
    readonly flags: Required<Flags>,
  ) {}

  static async create(flags: Flags = {}) {
    const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    return new SoftwareAuthenticator(keys, {
      userPresent: true,
      userVerified: true,
      backupEligible: true,
      backedUp: true,
      ...flags,
    });
  }

  get credentialId(): string {
    return base64url.encode(this.id);
  }

  private async authenticatorData(rpId: string, flags: Flags, attested?: Uint8Array) {
    const f = { ...this.flags, ...flags };
    const bits =
      (f.userPresent ? 0x01 : 0) |
      (f.userVerified ? 0x04 : 0) |
      (f.backupEligible ? 0x08 : 0) |
      (f.backedUp ? 0x10 : 0) |
      (attested ? 0x40 : 0);
    const counter = [this.counter >>> 24, (this.counter >>> 16) & 255, (this.counter >>> 8) & 255, this.counter & 255];
    return new Uint8Array([...(await sha256(utf8(rpId))), bits, ...counter, ...(attested ?? [])]);
  }

  /** The browser's JSON of a registration for the page's `options` (a creation options JSON). */
  async register(
    options: { challenge: string; rp: { id: string } },
    {
      origin,
      rpId = options.rp.id,
      flags = {},
      challenge = options.challenge,
      type = "webauthn.create",
    }: {
      origin: string;
      rpId?: string;
      flags?: Flags;
      challenge?: string;
      type?: string;
    },
  ): Promise<string> {
    const jwk = (await crypto.subtle.exportKey("jwk", this.keys.publicKey)) as JsonWebKey;
    const cose = cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, base64url.decode(jwk.x!)],
        [-3, base64url.decode(jwk.y!)],
      ]),
    );
    const attested = new Uint8Array([...new Uint8Array(16), 0, this.id.length, ...this.id, ...cose]);
    const authData = await this.authenticatorData(rpId, flags, attested);
    const clientDataJSON = utf8(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
    const attestationObject = cbor({ fmt: "none", attStmt: new Map(), authData });
    return JSON.stringify({
      id: this.credentialId,
      rawId: this.credentialId,
      type: "public-key",
      response: {
        clientDataJSON: base64url.encode(clientDataJSON),
        attestationObject: base64url.encode(attestationObject),
        transports: ["internal"],
      },
      clientExtensionResults: {},
    });
  }

  /** The browser's JSON of an assertion for the page's `options` (a request options JSON); the counter moves on. */
  async assert(
    options: { challenge: string; rpId: string },
    {
      origin,
      userHandle,
      rpId = options.rpId,
      flags = {},
      challenge = options.challenge,
      counter = this.counter + 1,
    }: { origin: string; userHandle?: string; rpId?: string; flags?: Flags; challenge?: string; counter?: number },
  ): Promise<string> {
    this.counter = counter;
    const authData = await this.authenticatorData(rpId, flags);
    const clientDataJSON = utf8(JSON.stringify({ type: "webauthn.get", challenge, origin, crossOrigin: false }));
    const signed = new Uint8Array([...authData, ...(await sha256(clientDataJSON))]);
    const raw = new Uint8Array(
      await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.keys.privateKey, signed),
    );
    return JSON.stringify({
      id: this.credentialId,
      rawId: this.credentialId,
      type: "public-key",
      response: {
        clientDataJSON: base64url.encode(clientDataJSON),
        authenticatorData: base64url.encode(authData),
        signature: base64url.encode(der(raw)),
        userHandle: userHandle ?? null,
      },
      clientExtensionResults: {},
    });
  }
}

/** The options a page carries in its passkey form's `data-options`, and that form's hidden fields. */
export function passkeyForm(page: string, kind: "get" | "create") {
  const match = new RegExp(`<form[^>]*data-passkey="${kind}" data-options="([^"]*)"[^>]*>([\\s\\S]*?)</form>`).exec(
    page,
  );
  if (!match) throw new Error(`no ${kind} passkey form on the page`);
  const unescape = (text: string) =>
    text
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  const fields: Record<string, string> = {};
  for (const [, name, value] of match[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) {
    fields[name!] = unescape(value!);
  }
  return { options: JSON.parse(unescape(match[1]!)), fields };
}
