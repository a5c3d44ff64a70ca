/**
 * How long a lease lets an isolate admit calls without asking: the bound on revocations and
 * policy changes reaching it. Free of Worker types, as the benchmarks read it too.
 */
export const LEASE_MS = 5_000;
