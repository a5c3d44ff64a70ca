/** The algorithms the service signs its tokens with (oauth/tokens.ts), as clients may ask for them. */
export const SIGNING_ALGORITHMS = ["EdDSA", "RS256"] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];
