/** Content-Type headers compared by their media type (RFC 9110 §8.3.1), never by prefix. */

export const FORM_MEDIA_TYPE = "application/x-www-form-urlencoded";

/** The header's `type/subtype`, lower-cased, without parameters; "" when absent. */
function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
}

export function isForm(contentType: string | null | undefined): boolean {
  return mediaType(contentType) === FORM_MEDIA_TYPE;
}

export function isJson(contentType: string | null | undefined): boolean {
  return mediaType(contentType) === "application/json";
}
