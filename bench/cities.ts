/** Round trips in milliseconds from each city (docs/edge.md, "Model and figures"), for the geography bench. */
export const CITIES = {
  oslo: { primary: 25, replica: 25, durableObject: 25, kv: 25 },
  virginia: { primary: 90, replica: 5, durableObject: 90, kv: 90 },
  sydney: { primary: 300, replica: 5, durableObject: 300, kv: 300 },
} as const;

export type City = keyof typeof CITIES;
