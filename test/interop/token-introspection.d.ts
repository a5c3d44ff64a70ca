/** The parts of `token-introspection` (it ships no types) that the interop tests use. */
declare module "token-introspection" {
  type Options = {
    endpoint?: string;
    client_id?: string;
    client_secret?: string;
    jwks_uri?: string;
    allowed_algs?: string[];
    fetch?: typeof fetch;
  };
  type Introspect = (token: string, tokenTypeHint?: string) => Promise<Record<string, unknown>>;
  const tokenIntrospection: ((options: Options) => Introspect) & {
    errors: { TokenNotActiveError: new () => Error; IntrospectionError: new () => Error };
  };
  export default tokenIntrospection;
}
