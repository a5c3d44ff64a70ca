import type { Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../errors";

/** The one value of the query parameter `name`, or undefined when it is absent; repeated, a 400. */
export function singleQueryValue(c: Context<AppEnv>, name: string): string | undefined {
  const values = c.req.queries(name);
  if (values !== undefined && values.length > 1) {
    throw new ApiError(400, "invalid_request", `Parameter '${name}' is repeated`);
  }
  return values?.[0];
}
