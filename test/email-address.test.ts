import { describe, expect, it } from "vitest";
import { describeImportErrors, importFileSchema } from "../src/schemas/import";
import { bearer, call, container, postForm, serverToken, basicAuth, webClient } from "./helpers/http";
import { createUser, importData } from "./helpers/seed";

const base64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const password = "a long enough passphrase";

function importProblems(email: string): string[] {
  const parsed = importFileSchema.safeParse({
    users: [{ userId: "1", uuid: crypto.randomUUID(), status: 1, email, published: 0, updated: 0 }],
  });
  return parsed.success ? [] : describeImportErrors(parsed.error);
}

function signIn(username: string) {
  return postForm(
    "/oauth/token",
    { grant_type: "password", username, password, redirect_uri: webClient.redirectUris[0]! },
    basicAuth(webClient.id, webClient.secret),
  );
}

describe("internationalized e-mail addresses (RFC 6531, IDN)", () => {
  it("imports an address with a UTF-8 local part and a Unicode domain, and finds it in every spelling", async () => {
    // Decomposed Å (A + combining ring) and upper case: one canonical form with the precomposed one.
    await createUser(9701, { email: "Æ\u0052ø.A\u030Ase@Bücher.Example", password, emails: [] });
    for (const spelling of [
      "ærø.åse@bücher.example",
      "ÆRØ.ÅSE@BÜCHER.EXAMPLE",
      "ærø.åse@xn--bcher-kva.example",
      "ærø.åse@XN--BCHER-KVA.example",
    ]) {
      const res = await signIn(spelling);
      expect(res.status, spelling).toBe(200);
    }
    await importData({
      mails: [
        {
          userId: "9701",
          clientId: webClient.id,
          template: "welcome",
          senderEmail: "no-reply@example.org",
          userEmail: "ærø.åse@xn--bcher-kva.example",
          created: 1709284500,
          token: `idn-${crypto.randomUUID()}`,
        },
      ],
    });
    const res = await call(`/api/2/mail?email=${encodeURIComponent(base64("ÆRØ.ÅSE@xn--bcher-kva.example"))}`, {
      headers: bearer(await serverToken()),
    });
    expect(res.status).toBe(200);
    const body = await container(res);
    expect(body.data[0].userEmail).toBe("ærø.åse@bücher.example");
  });

  it("shows the address in its canonical form (IDNA 2008 keeps ß, as browsers do)", async () => {
    const user = await createUser(9702, { email: "Jürgen@Straße.example", emails: [] });
    const res = await call("/api/2/user/9702", { headers: bearer(await serverToken()) });
    const body = await container(res);
    expect(body.data.email).toBe("jürgen@straße.example");
    expect(body.data.emails).toEqual([
      { value: "jürgen@straße.example", type: "other", primary: true, verified: false },
    ]);
    expect(user.row.email).toBe("Jürgen@Straße.example");
  });

  it("treats the Unicode and punycode spellings of one address as a duplicate within a file", () => {
    const parsed = importFileSchema.safeParse({
      users: [
        { userId: "1", uuid: crypto.randomUUID(), status: 1, email: "åse@bücher.example", published: 0, updated: 0 },
        {
          userId: "2",
          uuid: crypto.randomUUID(),
          status: 1,
          email: "ÅSE@xn--bcher-kva.example",
          published: 0,
          updated: 0,
        },
      ],
    });
    expect(parsed.success).toBe(false);
    expect(describeImportErrors(parsed.error!).join("\n")).toContain("already belongs to another user");
  });

  it.each([
    "ingrid.hansen@example.org",
    "o'brien+news@example.co.uk",
    "ærø.åse@example.no",
    "用户@例子.广告",
    "δοκιμή@παράδειγμα.δοκιμή",
    "a@xn--mller-kva.example",
  ])("accepts %s", (email) => {
    expect(importProblems(email)).toEqual([]);
  });

  it.each([
    ["no domain", "ingrid@"],
    ["no local part", "@example.org"],
    ["a domain without a dot", "ingrid@localhost"],
    ["an IP address", "ingrid@192.168.0.1"],
    ["a quoted local part", '"ingrid hansen"@example.org'],
    ["a space", "ingrid hansen@example.org"],
    ["two dots in a row", "ingrid..hansen@example.org"],
    ["a leading dot", ".ingrid@example.org"],
    ["a trailing dot in the domain", "ingrid@example.org."],
    ["a bidi override in the local part", "ingrid\u202Egro@example.org"],
    ["a zero-width joiner", "in\u200Dgrid@example.org"],
    ["a non-breaking space", "ingrid\u00A0hansen@example.org"],
    ["a control character", "ingrid\u0007@example.org"],
    ["a path in the domain", "ingrid@example.org/evil"],
    ["a port", "ingrid@example.org:25"],
    ["a punycode label that decodes to nothing valid", "ingrid@xn--a.example"],
    ["a hyphen at a label's end", "ingrid@bad-.example"],
    ["a local part over 64 bytes", `${"ø".repeat(33)}@example.org`],
    ["a surrounding space", " ingrid@example.org"],
    ["an address thousands of characters long", `${"a".repeat(3000)}@example.org`],
  ])("refuses %s", (_, email) => {
    expect(importProblems(email)).toEqual(["users[0].email: Invalid email address"]);
  });
});
