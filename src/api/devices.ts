/**
 * POST /api/2/devices: stores a mobile device fingerprint for the token's user. User token.
 * The fingerprint's hash is SHA-256, in hex, of the JSON array [deviceId, unified platform,
 * applicationName], the unified platform being `ios` for iPad and iPhone and `android` for
 * Android: the same device and application always give the same hash, whatever the version.
 */
import { Hono } from "hono";
import { saveDeviceFingerprint } from "../db/queries/devices";
import { findUserRefusal } from "../db/queries/users";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";
import { describeRoute, respond } from "../http/container";
import { nowInSeconds } from "../http/datetime";
import { validate } from "../http/validation";
import { requireToken } from "../middleware/auth";
import { type DeviceRequest, deviceRequestSchema } from "../schemas/devices";
import { deviceFingerprintSchema } from "../schemas/responses/service";

const UNIFIED_PLATFORMS: Record<DeviceRequest["platform"], string> = { iPad: "ios", iPhone: "ios", Android: "android" };

async function deviceHash(device: DeviceRequest): Promise<string> {
  const input = JSON.stringify([device.deviceId, UNIFIED_PLATFORMS[device.platform], device.applicationName]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(input));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export const deviceRoutes = new Hono<AppEnv>().post(
  "/devices",
  describeRoute({
    name: "Store a device fingerprint",
    controller: "api/devices#create",
    success: { status: 201, data: deviceFingerprintSchema },
  }),
  requireToken("devices", "user"),
  validate("form", deviceRequestSchema, "api", "Invalid payload data"),
  async (c) => {
    const device = c.req.valid("form");
    const caller = c.get("caller");
    const db = c.get("db")();
    // Only a user who may still sign in registers devices; the token alone may outlive that.
    if ((await findUserRefusal(db, caller.userId!)) !== undefined) {
      throw new ApiError(403, "access_denied", "Unauthorised access");
    }
    const hash = await deviceHash(device);
    await saveDeviceFingerprint(db, {
      hash,
      userId: caller.userId!,
      clientId: caller.clientId,
      platform: device.platform,
      applicationName: device.applicationName,
      applicationVersion: device.applicationVersion ?? null,
      created: nowInSeconds(),
    });
    return respond(c, { object: "DeviceFingerprint", data: { hash } }, 201);
  },
);
