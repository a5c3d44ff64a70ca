/**
 * The one script of the pages: it hands a form's WebAuthn options to the browser and posts back
 * what the authenticator made. Forms marked `data-passkey="get"` (sign in: a button, and
 * conditional mediation, the autofill of passkeys, where the browser offers it, unless the form says
 * `data-autofill="off"`, as after a passkey that failed) or `"create"` (a
 * new passkey, on submit) carry the options in `data-options`; the result goes into their
 * `credential` field. Everything it touches starts hidden, so a browser without WebAuthn (or
 * without script) sees the pages as before. Written out rather than taken from a library: it is
 * this page glue alone, inline under a CSP hash, with no build step of its own.
 */
export const PASSKEY_SCRIPT = `(() => {
  if (!window.PublicKeyCredential || !navigator.credentials) return;
  const decode = (text) =>
    Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=")), (c) => c.charCodeAt(0)).buffer;
  const encode = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  const ids = (list) => (list || []).map((c) => ({ ...c, id: decode(c.id) }));
  const requestOptions = (json) =>
    PublicKeyCredential.parseRequestOptionsFromJSON
      ? PublicKeyCredential.parseRequestOptionsFromJSON(json)
      : { ...json, challenge: decode(json.challenge), allowCredentials: ids(json.allowCredentials) };
  const creationOptions = (json) =>
    PublicKeyCredential.parseCreationOptionsFromJSON
      ? PublicKeyCredential.parseCreationOptionsFromJSON(json)
      : { ...json, challenge: decode(json.challenge), user: { ...json.user, id: decode(json.user.id) }, excludeCredentials: ids(json.excludeCredentials) };
  const asJSON = (credential) => {
    try {
      if (typeof credential.toJSON === "function") return credential.toJSON();
    } catch (error) {}
    const r = credential.response;
    const response = { clientDataJSON: encode(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = encode(r.attestationObject);
      response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      response.authenticatorData = encode(r.authenticatorData);
      response.signature = encode(r.signature);
      response.userHandle = r.userHandle ? encode(r.userHandle) : null;
    }
    return { id: credential.id, rawId: encode(credential.rawId), type: credential.type, response, clientExtensionResults: {} };
  };
  const send = (form, credential) => {
    form.elements.credential.value = JSON.stringify(asJSON(credential));
    form.submit();
  };
  const failed = (form) => (error) => {
    if (error && error.name === "AbortError") return;
    const alert = form.querySelector("[data-passkey-error]");
    if (alert) alert.hidden = false;
  };
  for (const form of document.querySelectorAll("form[data-passkey]")) {
    const options = JSON.parse(form.dataset.options);
    form.hidden = false;
    if (form.dataset.passkey === "create") {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        navigator.credentials
          .create({ publicKey: creationOptions(options) })
          .then((credential) => send(form, credential), failed(form));
      });
      continue;
    }
    let pending;
    const get = (mediation) => {
      if (pending) pending.abort();
      pending = new AbortController();
      return navigator.credentials
        .get({ publicKey: requestOptions(options), mediation, signal: pending.signal })
        .then((credential) => credential && send(form, credential));
    };
    form.querySelector("[data-passkey-start]").addEventListener("click", () => get("optional").catch(failed(form)));
    if (form.dataset.autofill !== "off" && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then((available) => available && get("conditional").catch(() => {}));
    }
  }
})();`;
