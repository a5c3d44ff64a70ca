/** Content-Type headers compared by their media type (RFC 9110 §8.3.1), never by prefix. */

export const FORM_MEDIA_TYPE = "application/x-www-form-urlencoded";

/** The header's `type/subtype`, lower-cased, without parameters; "" when absent. */
function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
}

export function isForm(contentType: string | null | undefined): boolean {
  return mediaType(contentType) === FORM_MEDIA_TYPE;
}

/** A form that declares no charset or UTF-8, and nothing else: the runtime's form parser reads it as it is. */
export function isUtf8Form(contentType: string | null | undefined): boolean {
  if (!isForm(contentType)) return false;
  const parameters = contentType!.split(";").slice(1);
  return parameters.length === 0 || (parameters.length === 1 && UTF8_CHARSET.test(parameters[0]!));
}

const UTF8_CHARSET = /^\s*charset="?utf-8"?\s*$/i;
