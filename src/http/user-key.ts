/** How API parameters name a user: the userId in canonical decimal, or the uuid in any case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const USER_ID = /^[1-9]\d{0,15}$/;

type UserKey = { userId: number } | { uuid: string };

/** The user the text names, or undefined when it is neither form (the legacy id is neither). */
export function parseUserKey(text: string): UserKey | undefined {
  if (UUID.test(text)) return { uuid: text.toLowerCase() };
  if (USER_ID.test(text) && Number.isSafeInteger(Number(text))) return { userId: Number(text) };
  return undefined;
}
