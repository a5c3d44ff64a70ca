import * as z from "zod/mini";

/**
 * A callback delivery, as the client's schedule queues it (durable-objects/callback-schedule.ts):
 * which client to tell of its waiting changes, and which try this is (0 the first; 1 to 5 the
 * retries).
 */
export const callbackDeliverySchema = z.object({
  clientId: z.string(),
  attempt: z.number().check(z.int(), z.nonnegative()),
});

export type CallbackDelivery = z.infer<typeof callbackDeliverySchema>;
