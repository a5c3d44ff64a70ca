/** The package ships no types; this is the one function the service uses (schemas/email-address.ts). */
declare module "punycode/punycode.es6.js" {
  /** Domain name or e-mail address with its punycode (`xn--`) labels decoded to Unicode. */
  export function toUnicode(input: string): string;
}
