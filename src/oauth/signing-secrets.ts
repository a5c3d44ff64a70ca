/**
 * A client's signing secrets over a rotation (docs/management.md "Managing clients"): until the
 * previous secret's end the previous one still signs responses, so that a client that has not yet
 * taken the new one keeps verifying, and assertions signed with either are taken; after it, only
 * the new one is.
 */
export type SealedSigningSecrets = {
  signingSecretSealed: string | null;
  previousSigningSecretSealed: string | null;
  previousSigningSecretExpires: number | null;
};

export function signingSecretsAt(secrets: SealedSigningSecrets, now: number) {
  const previous =
    secrets.previousSigningSecretSealed !== null && (secrets.previousSigningSecretExpires ?? 0) > now
      ? secrets.previousSigningSecretSealed
      : null;
  return {
    /** The sealed secret responses are signed with; null when the client has none. */
    signsWith: previous ?? secrets.signingSecretSealed,
    /** The sealed secrets a client's assertion may be signed with, the current one first. */
    verifiesWith: [secrets.signingSecretSealed, previous].filter((sealed): sealed is string => sealed !== null),
  };
}
