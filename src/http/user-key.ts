/**
 * How API parameters name a user: the userId in canonical decimal, or the uuid in any case; and
 * an integer id of any other row (a product) the same way as a userId.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INTEGER_ID = /^[1-9]\d{0,15}$/;

/** The id the text is: canonical decimal (no sign, space or leading zero) and a safe integer. */
export function parseIntegerId(text: string): number | undefined {
  return INTEGER_ID.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined;
}

type UserKey = { userId: number } | { uuid: string };

/** The user the text names, or undefined when it is neither form (the legacy id is neither). */
export function parseUserKey(text: string): UserKey | undefined {
  if (UUID.test(text)) return { uuid: text.toLowerCase() };
  const userId = parseIntegerId(text);
  return userId === undefined ? undefined : { userId };
}
