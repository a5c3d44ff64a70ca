/** The field names a client may ask users for (spec "Client"), each set to a boolean or a string. */
export const CLIENT_FIELDS = [
  "gender",
  "homeAddress",
  "deliveryAddress",
  "phoneNumber",
  "displayName",
  "email",
  "invoiceAddress",
  "names",
  "birthday",
] as const;
export type ClientField = (typeof CLIENT_FIELDS)[number];

/** The fields a client asks for: those set to true or to a text (such as "optional"). */
export function requestedFields(settings: Partial<Record<string, boolean | string>>): ClientField[] {
  return CLIENT_FIELDS.filter((field) => {
    const setting = settings[field];
    return setting === true || (typeof setting === "string" && setting !== "");
  });
}
