/** The caller's address as Cloudflare reports it; null when unknown (never trusted from elsewhere). */
export function clientIp(request: Request): string | null {
  return request.headers.get("CF-Connecting-IP");
}

/** Lower-cases IPv6 and drops an IPv4-mapped prefix so allow-list entries compare equal. */
export function normalizeIp(ip: string): string {
  const lower = ip.trim().toLowerCase();
  return lower.startsWith("::ffff:") && lower.includes(".") ? lower.slice(7) : lower;
}

/** An empty allow-list admits every address; otherwise the caller's address must be on it. */
export function ipAllowed(allowList: readonly string[], ip: string | null): boolean {
  if (allowList.length === 0) return true;
  if (ip === null) return false;
  const caller = normalizeIp(ip);
  return allowList.some((entry) => normalizeIp(entry) === caller);
}
