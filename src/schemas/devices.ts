// zod/mini, as everywhere in the Worker (see schemas/oauth.ts).
import * as z from "zod/mini";

/** Printable text without control characters, 1 to `max` characters. */
const printable = (max: number) => z.string().check(z.minLength(1), z.maxLength(max), z.regex(/^[^\p{Cc}]+$/u));

/** POST /api/2/devices, form-encoded. */
export const deviceRequestSchema = z.object({
  deviceId: printable(255),
  platform: z.enum(["iPad", "iPhone", "Android"]),
  applicationName: printable(255),
  applicationVersion: z.optional(printable(64)),
});

export type DeviceRequest = z.infer<typeof deviceRequestSchema>;
