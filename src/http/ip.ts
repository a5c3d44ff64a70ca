/** The caller's address as Cloudflare reports it; null when unknown (never trusted from elsewhere). */
export function clientIp(request: Request): string | null {
  return request.headers.get("CF-Connecting-IP");
}

/**
 * The network a caller's attempts are counted under (sign-in throttles): an IPv4 address, or the
 * /64 of an IPv6 address (one subscriber's, who may use any of its 2^64 addresses). Requests whose
 * address is unknown (never through Cloudflare's edge, which always sets it) share "unknown", so
 * that none goes uncounted.
 */
export function clientNetwork(request: Request): string {
  const ip = clientIp(request);
  const address = ip === null ? null : canonicalIp(ip);
  if (address === null) return "unknown";
  return address.includes(":") ? `${address.split(":").slice(0, 4).join(":")}::/64` : address;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/;

/**
 * One spelling per address, so that allow-list entries and the caller's address compare equal
 * however each was written: IPv4 as a plain dotted quad; IPv6 as eight lower-case hex groups
 * without leading zeros or `::`; an IPv4-mapped IPv6 address as its IPv4. Null when the text is
 * not an IP address.
 */
export function canonicalIp(text: string): string | null {
  const ip = text.trim().toLowerCase();
  if (ip.includes(":")) return canonicalIpv6(ip);
  const octets = IPV4.exec(ip)?.slice(1).map(Number);
  return octets && octets.every((o) => o <= 255) ? octets.join(".") : null;
}

function canonicalIpv6(ip: string): string | null {
  // A trailing dotted quad (::ffff:192.0.2.1) stands for the last two groups.
  let text = ip;
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (dotted) {
    const ipv4 = canonicalIp(dotted[2]!);
    if (ipv4 === null) return null;
    const [a, b, c, d] = ipv4.split(".").map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const [head, tail] = halves.map((half) => (half === "" ? [] : half.split(":"))) as [string[], string[]?];
  if (tail !== undefined && head.length + tail.length > 7) return null;
  const words =
    tail === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail];
  if (words.length !== 8 || !words.every((w) => HEX_GROUP.test(w))) return null;
  const values = words.map((w) => parseInt(w, 16));
  if (values.slice(0, 5).every((v) => v === 0) && values[5] === 0xffff) {
    return [values[6]! >> 8, values[6]! & 0xff, values[7]! >> 8, values[7]! & 0xff].join(".");
  }
  return values.map((v) => v.toString(16)).join(":");
}

/** An empty allow-list admits every address; otherwise the caller's address must be on it. */
export function ipAllowed(allowList: readonly string[], ip: string | null): boolean {
  if (allowList.length === 0) return true;
  const caller = ip === null ? null : canonicalIp(ip);
  if (caller === null) return false;
  return allowList.some((entry) => canonicalIp(entry) === caller);
}
