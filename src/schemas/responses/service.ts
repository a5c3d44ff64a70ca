/** The spec's Version object, API status and Device fingerprint. */
import * as z from "zod/mini";
import { datetime } from "./values";

export const versionSchema = z.object({
  apiVersion: z.number(),
  apiRevision: z.string(),
  webVersion: z.string(),
  webRevision: z.string(),
  currentTime: datetime,
  timeZone: z.string(),
});

export const statusSchema = z.object({
  oauth: z.object({ flows: z.string(), grantTypes: z.string() }),
  ...versionSchema.shape,
  block: z.boolean(),
  /**
   * `up`; `misconfigured` while a secret the service needs is missing or wrong; `degraded` while the
   * isolate has seen D1, KV, a Durable Object or a queue fail within the last minute (`problems`).
   */
  platform: z.string(),
  /** Only when not `up`: what is wrong, naming the secret, never its value. */
  problems: z.optional(z.array(z.string())),
});

export const deviceFingerprintSchema = z.object({ hash: z.string().check(z.regex(/^[0-9a-f]{64}$/)) });

z.globalRegistry.add(versionSchema, { id: "Version" });
z.globalRegistry.add(statusSchema, { id: "Status" });
z.globalRegistry.add(deviceFingerprintSchema, { id: "DeviceFingerprint" });
