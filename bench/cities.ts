/** Round trips in milliseconds from each city (docs/edge.md, "Model and figures"), for the geography bench. */
export const CITIES = {
  oslo: { primary: 25, replica: 25, durableObject: 25, kv: 25 },
  virginia: { primary: 90, replica: 5, durableObject: 90, kv: 90 },
  sydney: { primary: 300, replica: 5, durableObject: 300, kv: 300 },
} as const;

export type City = keyof typeof CITIES;

/**
 * Every hop of the sign-in Worker, placed next to the D1 primary: one inside Western Europe
 * (docs/edge.md, "a hop inside one region"), where the primary, the clients' objects (hinted
 * there) and, as the model counts it, KV's central stores are.
 */
export const NEXT_TO_PRIMARY: Hops = { primary: 3, replica: 3, durableObject: 3, kv: 3 };

export type Hops = { primary: number; replica: number; durableObject: number; kv: number };
