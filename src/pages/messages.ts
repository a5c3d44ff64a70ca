/** The browser pages' texts, per locale. */
import type { ClientField } from "../schemas/client-fields";
import type { Locale } from "./locale";

type Text = { title: string; text: string };

type Messages = {
  linkInvalid: Text;
  linkExpired: Text;
  linkUsed: Text;
  signedOut: Text;
  /** The language switch of every page: its label, and each locale's name in its own language. */
  language: string;
  /** A way back to the client from a page where the flow ends. */
  backTo: (client: string) => string;
  /** GET /oauth/logout with a live session asks first. */
  signOut: { title: string; text: string; confirm: string };
  /** The webview entry, opened with another user's code than the browser's session's. */
  accountSwitch: {
    title: string;
    current: (email: string) => string;
    next: (email: string) => string;
    confirm: string;
    cancel: string;
  };
  /** The authorization request cannot go back to the client: no registered URI to send it to. */
  requestInvalid: Text;
  /** The platform failed (503): nothing was lost, the same step works again in a moment. */
  unavailable: Text;
  signIn: {
    title: string;
    intro: (client: string) => string;
    email: string;
    password: string;
    remember: string;
    submit: string;
    sendLink: string;
    wrong: string;
    throttled: string;
    refused: string;
    formExpired: string;
    emailMissing: string;
    /** The sign-up view (/flow/signup): an account is made by the e-mailed link. */
    signUpTitle: string;
    signUpIntro: (client: string) => string;
    /** The sign-up view's button: it mails the link that makes the account. */
    signUpSubmit: string;
    /** The link view (/flow/signin): sign in by an e-mailed link alone. */
    linkTitle: string;
    linkIntro: (client: string) => string;
    /** From either view back to the login page. */
    haveAccount: string;
    withPassword: string;
    /** Passkeys, offered beside the password where BASE_URL allows them. */
    passkey: string;
    passkeyFailed: string;
    passkeyUnknown: string;
    /** Forgot password: the view that mails a link to set a new password. */
    forgotPassword: string;
    /** The login view's way to the sign-up view. */
    createAccount: string;
    /** The sign-up view's profile fields (schemas/sign-up.ts), and what is said when they are not right. */
    profile: {
      givenName: string;
      familyName: string;
      displayName: string;
      birthday: string;
      gender: string;
      genders: Record<"undisclosed" | "female" | "male" | "other", string>;
      optional: string;
      missing: string;
      invalid: string;
    };
    resetTitle: string;
    resetIntro: string;
    resetSubmit: string;
  };
  /** A password reset link's page: the new password. */
  newPassword: {
    title: string;
    intro: (client: string) => string;
    password: string;
    hint: string;
    submit: string;
    tooShort: string;
  };
  /** `prompt=select_account`: whether to continue as the signed-in user. */
  selectAccount: {
    title: string;
    intro: (client: string) => string;
    continueAs: (account: string) => string;
    switch: string;
  };
  /** /oauth/account: the user's passkeys and authenticator app. */
  account: {
    title: string;
    signedInAs: (email: string) => string;
    signInFirst: string;
    confirmIntro: string;
    confirm: string;
    passkeys: string;
    noPasskeys: string;
    passkeyUse: (added: string, used: string | null) => string;
    remove: (name: string) => string;
    passkeyName: string;
    addPasskey: string;
    passkeyAdded: string;
    passkeyRemoved: string;
    passkeyNotAdded: string;
    passkeysUnavailable: string;
    authenticator: string;
    authenticatorOn: (since: string, codesLeft: number) => string;
    authenticatorOff: string;
    setUp: string;
    turnOff: string;
    newCodes: string;
    turnedOff: string;
  };
  /** The second factor: its code on every sign-in once enrolled, and its enrolment. */
  secondFactor: {
    title: string;
    intro: string;
    code: string;
    hint: string;
    verify: string;
    wrong: string;
    enrolTitle: string;
    /** `client` asks for it in a sign-in; null on the account page, where the user asks. */
    enrolIntro: (client: string | null) => string;
    qrLabel: string;
    manual: string;
    enrolCode: string;
    enrol: string;
    enrolExpired: string;
    codesTitle: string;
    codesIntro: string;
    continue: string;
  };
  consent: {
    title: string;
    intro: (client: string) => string;
    /** Who is signed in, and the way to another account. */
    signedInAs: (account: string) => string;
    notYou: string;
    nothing: string;
    approve: string;
    deny: string;
    fields: Record<ClientField, string>;
  };
  linkSent: Text;
  /** A sign-in link used already, or replaced by a newer one. */
  signInLinkSpent: Text;
  signInLinkExpired: Text;
  confirmSignIn: {
    title: string;
    intro: (client: string) => string;
    /** The address the link signs in with. */
    account: (email: string) => string;
    /** The browser is signed in as another user, whom confirming signs out. */
    switches: (email: string) => string;
    context: string;
    confirm: string;
  };
};

export const MESSAGES: Record<Locale, Messages> = {
  en_US: {
    linkInvalid: { title: "This link does not work", text: "Go back to the app and open the page again." },
    linkExpired: { title: "This link has expired", text: "Go back to the app and open the page again." },
    linkUsed: {
      title: "This link has already been used",
      text: "A link signs in once. Go back to the app and open the page again.",
    },
    language: "Language",
    backTo: (client) => `Back to ${client}`,
    signedOut: { title: "You are signed out", text: "You can close this page." },
    signOut: { title: "Sign out?", text: "Sign out of your account on this device?", confirm: "Sign out" },
    accountSwitch: {
      title: "Switch account?",
      current: (email) => `This browser is signed in as ${email}.`,
      next: (email) => `The app that opened this page asks to sign in as ${email} instead.`,
      confirm: "Switch account",
      cancel: "If you did not expect this, close this page: nothing changes.",
    },
    unavailable: {
      title: "We could not finish this just now",
      text: "Nothing was lost. Wait a few seconds, then go back and try again.",
    },
    requestInvalid: {
      title: "Sign-in cannot start",
      text: "The site that sent you here made a request we cannot accept. Go back and try again, or contact the site.",
    },
    signIn: {
      title: "Sign in",
      intro: (client) => `Sign in to continue to ${client}.`,
      email: "E-mail address",
      password: "Password",
      remember: "Keep me signed in on this device",
      submit: "Sign in",
      sendLink: "E-mail me a sign-in link",
      wrong: "The e-mail address or the password is wrong.",
      throttled: "Too many attempts. Wait a few minutes and try again.",
      refused: "This account cannot sign in.",
      formExpired: "The page had expired. Please try again.",
      emailMissing: "Enter your e-mail address.",
      signUpTitle: "Create an account",
      signUpSubmit: "Create account",
      signUpIntro: (client) =>
        `Enter your e-mail address to create an account and continue to ${client}. We e-mail you a link that signs you in.`,
      linkTitle: "Sign in with a link",
      linkIntro: (client) =>
        `Enter your e-mail address to continue to ${client}. We e-mail you a link that signs you in, no password needed.`,
      haveAccount: "Already have an account? Sign in",
      withPassword: "Sign in with a password instead",
      passkey: "Sign in with a passkey",
      passkeyFailed: "The passkey did not sign you in. Try again, or sign in another way.",
      passkeyUnknown: "This passkey is not known here any more. Sign in another way.",
      forgotPassword: "Forgot your password?",
      createAccount: "New here? Create an account",
      profile: {
        givenName: "First name",
        familyName: "Last name",
        displayName: "Display name",
        birthday: "Date of birth",
        gender: "Gender",
        genders: { undisclosed: "Prefer not to say", female: "Female", male: "Male", other: "Other" },
        optional: "(optional)",
        missing: "Fill in the fields that are not marked optional.",
        invalid: "Check the details: a date of birth is written YYYY-MM-DD.",
      },
      resetTitle: "Set a new password",
      resetIntro: "Enter your e-mail address. We e-mail you a link to set a new password.",
      resetSubmit: "E-mail me a link",
    },
    selectAccount: {
      title: "Choose an account",
      intro: (client) => `Continue to ${client} as the account signed in here, or sign in with another.`,
      continueAs: (account) => `Continue as ${account}`,
      switch: "Use another account",
    },
    newPassword: {
      title: "Set a new password",
      intro: (client) => `Choose a new password, then continue to ${client}. You are signed out everywhere else.`,
      password: "New password",
      hint: "At least 8 characters.",
      submit: "Set password and continue",
      tooShort: "The password must have at least 8 characters and at most 256.",
    },
    account: {
      title: "Sign-in methods",
      signedInAs: (email) => `Signed in as ${email}.`,
      signInFirst: "You are not signed in. Sign in at a site that uses this account, then open this page again.",
      confirmIntro: "To change how you sign in, confirm it is you.",
      confirm: "Confirm",
      passkeys: "Passkeys",
      noPasskeys:
        "You have no passkeys yet. A passkey signs you in with your device's screen lock, without a password.",
      passkeyUse: (added, used) => `Added ${added}, ${used ? `last used ${used}` : "not used yet"}.`,
      remove: (name) => `Remove ${name}`,
      passkeyName: "Name for the new passkey",
      addPasskey: "Add a passkey",
      passkeyAdded: "The passkey was added.",
      passkeyRemoved: "The passkey was removed.",
      passkeyNotAdded: "The passkey was not added. Try again.",
      passkeysUnavailable: "Passkeys cannot be used at this address.",
      authenticator: "Authenticator app",
      authenticatorOn: (since, left) => `On since ${since}. ${left} of 10 recovery codes left.`,
      authenticatorOff: "Not set up. With one, every sign-in also asks for a code from the app.",
      setUp: "Set up",
      turnOff: "Turn off",
      newCodes: "New recovery codes",
      turnedOff: "The authenticator app was turned off.",
    },
    secondFactor: {
      title: "Enter your code",
      intro: "Open your authenticator app and enter the 6-digit code it shows for this account.",
      code: "Code",
      hint: "Lost your authenticator? Enter one of your recovery codes instead.",
      verify: "Continue",
      wrong: "That code is not right, or it was used already. Try the next code.",
      enrolTitle: "Set up a second factor",
      enrolIntro: (client) =>
        `${client ? `${client} asks you to sign in with a second factor. ` : ""}Scan this QR code with an authenticator app, then enter the code it shows.`,
      qrLabel: "QR code for your authenticator app",
      manual: "Cannot scan? Enter this key in the app instead:",
      enrolCode: "Code from the app",
      enrol: "Turn on",
      enrolExpired: "This set-up page had expired. Scan the new QR code.",
      codesTitle: "Save your recovery codes",
      codesIntro:
        "Each code signs you in once if you lose your authenticator. Keep them somewhere safe: they are not shown again.",
      continue: "I have saved them, continue",
    },
    consent: {
      title: "Allow access",
      intro: (client) => `${client} asks for access to your account.`,
      signedInAs: (account) => `You are signed in as ${account}.`,
      notYou: "Not you? Use another account",
      nothing: "It asks for no details beyond who you are.",
      approve: "Allow",
      deny: "Deny",
      fields: {
        names: "Your name",
        displayName: "Your display name",
        email: "Your e-mail address",
        phoneNumber: "Your phone number",
        birthday: "Your birthday",
        gender: "Your gender",
        homeAddress: "Your home address",
        deliveryAddress: "Your delivery address",
        invoiceAddress: "Your invoice address",
      },
    },
    linkSent: {
      title: "Check your e-mail",
      text: "If the address can sign in, a link is on its way. It works once, for 5 minutes.",
    },
    signInLinkSpent: {
      title: "This link no longer works",
      text: "It has been used, or a newer link has been sent. Ask for a new link to sign in.",
    },
    signInLinkExpired: { title: "This link has expired", text: "A link works for 5 minutes. Ask for a new one." },
    confirmSignIn: {
      title: "Confirm sign-in",
      intro: (client) => `Sign in to ${client} with this link?`,
      account: (email) => `It signs in as ${email}.`,
      switches: (email) => `This browser is signed in as ${email}, who will be signed out here.`,
      context: "Requested for:",
      confirm: "Sign in",
    },
  },
  nb_NO: {
    linkInvalid: { title: "Denne lenken virker ikke", text: "Gå tilbake til appen og åpne siden på nytt." },
    linkExpired: { title: "Denne lenken er utløpt", text: "Gå tilbake til appen og åpne siden på nytt." },
    linkUsed: {
      title: "Denne lenken er allerede brukt",
      text: "En lenke logger inn én gang. Gå tilbake til appen og åpne siden på nytt.",
    },
    language: "Språk",
    backTo: (client) => `Tilbake til ${client}`,
    signedOut: { title: "Du er logget ut", text: "Du kan lukke denne siden." },
    signOut: { title: "Logge ut?", text: "Logge ut av kontoen din på denne enheten?", confirm: "Logg ut" },
    accountSwitch: {
      title: "Bytte konto?",
      current: (email) => `Denne nettleseren er logget inn som ${email}.`,
      next: (email) => `Appen som åpnet denne siden, vil logge inn som ${email} i stedet.`,
      confirm: "Bytt konto",
      cancel: "Hvis du ikke ventet dette, lukk denne siden: ingenting endres.",
    },
    unavailable: {
      title: "Vi fikk ikke fullført dette akkurat nå",
      text: "Ingenting gikk tapt. Vent noen sekunder, gå tilbake og prøv igjen.",
    },
    requestInvalid: {
      title: "Innloggingen kan ikke starte",
      text: "Nettstedet som sendte deg hit, sendte en forespørsel vi ikke kan godta. Gå tilbake og prøv igjen, eller kontakt nettstedet.",
    },
    signIn: {
      title: "Logg inn",
      intro: (client) => `Logg inn for å fortsette til ${client}.`,
      email: "E-postadresse",
      password: "Passord",
      remember: "Hold meg innlogget på denne enheten",
      submit: "Logg inn",
      sendLink: "Send meg en innloggingslenke på e-post",
      wrong: "E-postadressen eller passordet er feil.",
      throttled: "For mange forsøk. Vent noen minutter og prøv igjen.",
      refused: "Denne kontoen kan ikke logge inn.",
      formExpired: "Siden var utløpt. Prøv igjen.",
      emailMissing: "Skriv inn e-postadressen din.",
      signUpTitle: "Opprett en konto",
      signUpSubmit: "Opprett konto",
      signUpIntro: (client) =>
        `Skriv inn e-postadressen din for å opprette en konto og fortsette til ${client}. Vi sender deg en lenke som logger deg inn.`,
      linkTitle: "Logg inn med en lenke",
      linkIntro: (client) =>
        `Skriv inn e-postadressen din for å fortsette til ${client}. Vi sender deg en lenke som logger deg inn, uten passord.`,
      haveAccount: "Har du allerede en konto? Logg inn",
      withPassword: "Logg inn med passord i stedet",
      passkey: "Logg inn med passnøkkel",
      passkeyFailed: "Passnøkkelen logget deg ikke inn. Prøv igjen, eller logg inn på en annen måte.",
      passkeyUnknown: "Denne passnøkkelen er ikke kjent her lenger. Logg inn på en annen måte.",
      forgotPassword: "Glemt passordet?",
      createAccount: "Ny her? Opprett en konto",
      profile: {
        givenName: "Fornavn",
        familyName: "Etternavn",
        displayName: "Visningsnavn",
        birthday: "Fødselsdato",
        gender: "Kjønn",
        genders: { undisclosed: "Vil ikke oppgi", female: "Kvinne", male: "Mann", other: "Annet" },
        optional: "(valgfritt)",
        missing: "Fyll ut feltene som ikke er merket valgfrie.",
        invalid: "Sjekk opplysningene: en fødselsdato skrives ÅÅÅÅ-MM-DD.",
      },
      resetTitle: "Velg nytt passord",
      resetIntro: "Skriv inn e-postadressen din. Vi sender deg en lenke for å velge nytt passord.",
      resetSubmit: "Send meg en lenke",
    },
    selectAccount: {
      title: "Velg konto",
      intro: (client) => `Fortsett til ${client} med kontoen som er logget inn her, eller logg inn med en annen.`,
      continueAs: (account) => `Fortsett som ${account}`,
      switch: "Bruk en annen konto",
    },
    newPassword: {
      title: "Velg nytt passord",
      intro: (client) => `Velg et nytt passord, og fortsett til ${client}. Du blir logget ut alle andre steder.`,
      password: "Nytt passord",
      hint: "Minst 8 tegn.",
      submit: "Lagre passordet og fortsett",
      tooShort: "Passordet må ha minst 8 og høyst 256 tegn.",
    },
    account: {
      title: "Innloggingsmetoder",
      signedInAs: (email) => `Logget inn som ${email}.`,
      signInFirst: "Du er ikke logget inn. Logg inn på et nettsted som bruker denne kontoen, og åpne siden igjen.",
      confirmIntro: "For å endre hvordan du logger inn, bekreft at det er deg.",
      confirm: "Bekreft",
      passkeys: "Passnøkler",
      noPasskeys:
        "Du har ingen passnøkler ennå. En passnøkkel logger deg inn med skjermlåsen på enheten, uten passord.",
      passkeyUse: (added, used) => `Lagt til ${added}, ${used ? `sist brukt ${used}` : "ikke brukt ennå"}.`,
      remove: (name) => `Fjern ${name}`,
      passkeyName: "Navn på den nye passnøkkelen",
      addPasskey: "Legg til passnøkkel",
      passkeyAdded: "Passnøkkelen ble lagt til.",
      passkeyRemoved: "Passnøkkelen ble fjernet.",
      passkeyNotAdded: "Passnøkkelen ble ikke lagt til. Prøv igjen.",
      passkeysUnavailable: "Passnøkler kan ikke brukes på denne adressen.",
      authenticator: "Autentiseringsapp",
      authenticatorOn: (since, left) => `På siden ${since}. ${left} av 10 gjenopprettingskoder igjen.`,
      authenticatorOff: "Ikke satt opp. Med en app ber hver innlogging også om en kode fra appen.",
      setUp: "Sett opp",
      turnOff: "Slå av",
      newCodes: "Nye gjenopprettingskoder",
      turnedOff: "Autentiseringsappen ble slått av.",
    },
    secondFactor: {
      title: "Skriv inn koden",
      intro: "Åpne autentiseringsappen og skriv inn den sekssifrede koden den viser for denne kontoen.",
      code: "Kode",
      hint: "Mistet autentiseringsappen? Skriv inn en av gjenopprettingskodene dine i stedet.",
      verify: "Fortsett",
      wrong: "Koden er feil, eller den er allerede brukt. Prøv neste kode.",
      enrolTitle: "Slå på totrinnsbekreftelse",
      enrolIntro: (client) =>
        `${client ? `${client} ber deg logge inn med totrinnsbekreftelse. ` : ""}Skann QR-koden med en autentiseringsapp, og skriv inn koden den viser.`,
      qrLabel: "QR-kode for autentiseringsappen",
      manual: "Får du ikke skannet? Skriv inn denne nøkkelen i appen i stedet:",
      enrolCode: "Kode fra appen",
      enrol: "Slå på",
      enrolExpired: "Siden var utløpt. Skann den nye QR-koden.",
      codesTitle: "Ta vare på gjenopprettingskodene",
      codesIntro:
        "Hver kode logger deg inn én gang hvis du mister autentiseringsappen. Oppbevar dem trygt: de vises ikke igjen.",
      continue: "Jeg har tatt vare på dem, fortsett",
    },
    consent: {
      title: "Gi tilgang",
      intro: (client) => `${client} ber om tilgang til kontoen din.`,
      signedInAs: (account) => `Du er logget inn som ${account}.`,
      notYou: "Ikke deg? Bruk en annen konto",
      nothing: "Den ber ikke om flere opplysninger enn hvem du er.",
      approve: "Tillat",
      deny: "Avslå",
      fields: {
        names: "Navnet ditt",
        displayName: "Visningsnavnet ditt",
        email: "E-postadressen din",
        phoneNumber: "Telefonnummeret ditt",
        birthday: "Fødselsdagen din",
        gender: "Kjønnet ditt",
        homeAddress: "Hjemmeadressen din",
        deliveryAddress: "Leveringsadressen din",
        invoiceAddress: "Fakturaadressen din",
      },
    },
    linkSent: {
      title: "Sjekk e-posten din",
      text: "Hvis adressen kan logge inn, er en lenke på vei. Den virker én gang, i 5 minutter.",
    },
    signInLinkSpent: {
      title: "Denne lenken virker ikke lenger",
      text: "Den er brukt, eller en nyere lenke er sendt. Be om en ny lenke for å logge inn.",
    },
    signInLinkExpired: { title: "Denne lenken er utløpt", text: "En lenke virker i 5 minutter. Be om en ny." },
    confirmSignIn: {
      title: "Bekreft innlogging",
      intro: (client) => `Logge inn på ${client} med denne lenken?`,
      account: (email) => `Den logger inn som ${email}.`,
      switches: (email) => `Denne nettleseren er logget inn som ${email}, som blir logget ut her.`,
      context: "Bedt om for:",
      confirm: "Logg inn",
    },
  },
  sv_SE: {
    linkInvalid: { title: "Den här länken fungerar inte", text: "Gå tillbaka till appen och öppna sidan igen." },
    linkExpired: { title: "Den här länken har gått ut", text: "Gå tillbaka till appen och öppna sidan igen." },
    linkUsed: {
      title: "Den här länken har redan använts",
      text: "En länk loggar in en gång. Gå tillbaka till appen och öppna sidan igen.",
    },
    language: "Språk",
    backTo: (client) => `Tillbaka till ${client}`,
    signedOut: { title: "Du är utloggad", text: "Du kan stänga den här sidan." },
    signOut: { title: "Logga ut?", text: "Logga ut från ditt konto på den här enheten?", confirm: "Logga ut" },
    accountSwitch: {
      title: "Byta konto?",
      current: (email) => `Den här webbläsaren är inloggad som ${email}.`,
      next: (email) => `Appen som öppnade den här sidan vill logga in som ${email} i stället.`,
      confirm: "Byt konto",
      cancel: "Om du inte väntade dig detta, stäng sidan: inget ändras.",
    },
    unavailable: {
      title: "Vi kunde inte slutföra detta just nu",
      text: "Inget gick förlorat. Vänta några sekunder, gå tillbaka och försök igen.",
    },
    requestInvalid: {
      title: "Inloggningen kan inte starta",
      text: "Webbplatsen som skickade dig hit gjorde en begäran vi inte kan godta. Gå tillbaka och försök igen, eller kontakta webbplatsen.",
    },
    signIn: {
      title: "Logga in",
      intro: (client) => `Logga in för att fortsätta till ${client}.`,
      email: "E-postadress",
      password: "Lösenord",
      remember: "Håll mig inloggad på den här enheten",
      submit: "Logga in",
      sendLink: "Skicka en inloggningslänk till min e-post",
      wrong: "E-postadressen eller lösenordet är fel.",
      throttled: "För många försök. Vänta några minuter och försök igen.",
      refused: "Det här kontot kan inte logga in.",
      formExpired: "Sidan hade gått ut. Försök igen.",
      emailMissing: "Ange din e-postadress.",
      signUpTitle: "Skapa ett konto",
      signUpSubmit: "Skapa konto",
      signUpIntro: (client) =>
        `Ange din e-postadress för att skapa ett konto och fortsätta till ${client}. Vi skickar en länk som loggar in dig.`,
      linkTitle: "Logga in med en länk",
      linkIntro: (client) =>
        `Ange din e-postadress för att fortsätta till ${client}. Vi skickar en länk som loggar in dig, utan lösenord.`,
      haveAccount: "Har du redan ett konto? Logga in",
      withPassword: "Logga in med lösenord i stället",
      passkey: "Logga in med lösennyckel",
      passkeyFailed: "Lösennyckeln loggade inte in dig. Försök igen, eller logga in på ett annat sätt.",
      passkeyUnknown: "Den här lösennyckeln är inte känd här längre. Logga in på ett annat sätt.",
      forgotPassword: "Glömt lösenordet?",
      createAccount: "Ny här? Skapa ett konto",
      profile: {
        givenName: "Förnamn",
        familyName: "Efternamn",
        displayName: "Visningsnamn",
        birthday: "Födelsedatum",
        gender: "Kön",
        genders: { undisclosed: "Vill inte ange", female: "Kvinna", male: "Man", other: "Annat" },
        optional: "(frivilligt)",
        missing: "Fyll i fälten som inte är markerade som frivilliga.",
        invalid: "Kontrollera uppgifterna: ett födelsedatum skrivs ÅÅÅÅ-MM-DD.",
      },
      resetTitle: "Välj ett nytt lösenord",
      resetIntro: "Ange din e-postadress. Vi mejlar dig en länk för att välja ett nytt lösenord.",
      resetSubmit: "Mejla mig en länk",
    },
    selectAccount: {
      title: "Välj konto",
      intro: (client) => `Fortsätt till ${client} med kontot som är inloggat här, eller logga in med ett annat.`,
      continueAs: (account) => `Fortsätt som ${account}`,
      switch: "Använd ett annat konto",
    },
    newPassword: {
      title: "Välj ett nytt lösenord",
      intro: (client) => `Välj ett nytt lösenord och fortsätt till ${client}. Du loggas ut överallt annars.`,
      password: "Nytt lösenord",
      hint: "Minst 8 tecken.",
      submit: "Spara lösenordet och fortsätt",
      tooShort: "Lösenordet måste ha minst 8 och högst 256 tecken.",
    },
    account: {
      title: "Inloggningsmetoder",
      signedInAs: (email) => `Inloggad som ${email}.`,
      signInFirst: "Du är inte inloggad. Logga in på en webbplats som använder det här kontot och öppna sidan igen.",
      confirmIntro: "Bekräfta att det är du för att ändra hur du loggar in.",
      confirm: "Bekräfta",
      passkeys: "Lösennycklar",
      noPasskeys: "Du har inga lösennycklar än. En lösennyckel loggar in dig med enhetens skärmlås, utan lösenord.",
      passkeyUse: (added, used) => `Tillagd ${added}, ${used ? `senast använd ${used}` : "inte använd än"}.`,
      remove: (name) => `Ta bort ${name}`,
      passkeyName: "Namn på den nya lösennyckeln",
      addPasskey: "Lägg till en lösennyckel",
      passkeyAdded: "Lösennyckeln lades till.",
      passkeyRemoved: "Lösennyckeln togs bort.",
      passkeyNotAdded: "Lösennyckeln lades inte till. Försök igen.",
      passkeysUnavailable: "Lösennycklar kan inte användas på den här adressen.",
      authenticator: "Autentiseringsapp",
      authenticatorOn: (since, left) => `På sedan ${since}. ${left} av 10 återställningskoder kvar.`,
      authenticatorOff: "Inte konfigurerad. Med en app ber varje inloggning också om en kod från appen.",
      setUp: "Konfigurera",
      turnOff: "Stäng av",
      newCodes: "Nya återställningskoder",
      turnedOff: "Autentiseringsappen stängdes av.",
    },
    secondFactor: {
      title: "Ange din kod",
      intro: "Öppna din autentiseringsapp och ange den sexsiffriga kod den visar för det här kontot.",
      code: "Kod",
      hint: "Har du tappat bort autentiseringsappen? Ange en av dina återställningskoder i stället.",
      verify: "Fortsätt",
      wrong: "Koden stämmer inte, eller så har den redan använts. Prova nästa kod.",
      enrolTitle: "Aktivera tvåstegsverifiering",
      enrolIntro: (client) =>
        `${client ? `${client} ber dig logga in med tvåstegsverifiering. ` : ""}Skanna QR-koden med en autentiseringsapp och ange koden den visar.`,
      qrLabel: "QR-kod för autentiseringsappen",
      manual: "Går det inte att skanna? Ange den här nyckeln i appen i stället:",
      enrolCode: "Kod från appen",
      enrol: "Aktivera",
      enrolExpired: "Sidan hade gått ut. Skanna den nya QR-koden.",
      codesTitle: "Spara dina återställningskoder",
      codesIntro:
        "Varje kod loggar in dig en gång om du tappar bort autentiseringsappen. Förvara dem säkert: de visas inte igen.",
      continue: "Jag har sparat dem, fortsätt",
    },
    consent: {
      title: "Ge åtkomst",
      intro: (client) => `${client} ber om åtkomst till ditt konto.`,
      signedInAs: (account) => `Du är inloggad som ${account}.`,
      notYou: "Inte du? Använd ett annat konto",
      nothing: "Den ber inte om fler uppgifter än vem du är.",
      approve: "Tillåt",
      deny: "Neka",
      fields: {
        names: "Ditt namn",
        displayName: "Ditt visningsnamn",
        email: "Din e-postadress",
        phoneNumber: "Ditt telefonnummer",
        birthday: "Din födelsedag",
        gender: "Ditt kön",
        homeAddress: "Din hemadress",
        deliveryAddress: "Din leveransadress",
        invoiceAddress: "Din fakturaadress",
      },
    },
    linkSent: {
      title: "Kolla din e-post",
      text: "Om adressen kan logga in är en länk på väg. Den fungerar en gång, i 5 minuter.",
    },
    signInLinkSpent: {
      title: "Den här länken fungerar inte längre",
      text: "Den har använts, eller så har en nyare länk skickats. Be om en ny länk för att logga in.",
    },
    signInLinkExpired: { title: "Den här länken har gått ut", text: "En länk fungerar i 5 minuter. Be om en ny." },
    confirmSignIn: {
      title: "Bekräfta inloggning",
      intro: (client) => `Logga in på ${client} med den här länken?`,
      account: (email) => `Den loggar in som ${email}.`,
      switches: (email) => `Den här webbläsaren är inloggad som ${email}, som loggas ut här.`,
      context: "Begärd för:",
      confirm: "Logga in",
    },
  },
};

type SignInMail = {
  subject: (client: string) => string;
  text: (client: string, url: string, context: string | null) => string;
};

/** The sign-in link's mail, in the locale of the page or request that asked for it. */
/** What a link that confirms a new sign-in address says above the link (its mail's `context`). */
export const ADDRESS_CHANGE_CONTEXT: Record<Locale, string> = {
  en_US: "This address was given as your new sign-in address. Opening the link confirms it.",
  nb_NO: "Denne adressen ble oppgitt som din nye innloggingsadresse. Å åpne lenken bekrefter den.",
  sv_SE: "Den här adressen angavs som din nya inloggningsadress. Att öppna länken bekräftar den.",
};

/** The text message that carries a new phone number's code (api/manage/user-profile.ts). */
export const PHONE_CODE_TEXT: Record<Locale, (code: string, client: string) => string> = {
  en_US: (code, client) => `${code} is your code to confirm this number for ${client}. It expires in 10 minutes.`,
  nb_NO: (code, client) =>
    `${code} er koden din for å bekrefte dette nummeret hos ${client}. Den utløper om 10 minutter.`,
  sv_SE: (code, client) =>
    `${code} är din kod för att bekräfta det här numret hos ${client}. Den går ut om 10 minuter.`,
};

/** The mail of a link that sets a new password (the login page's "Forgot your password?"). */
export const RESET_MAIL: Record<Locale, SignInMail> = {
  en_US: {
    subject: (client) => `Set a new password for ${client}`,
    text: (client, url) =>
      `Open this link to set a new password and continue to ${client}:\n\n${url}\n\n` +
      "It works once, for 5 minutes. If you did not ask for it, you can ignore this mail: your password stays as it is.",
  },
  nb_NO: {
    subject: (client) => `Velg nytt passord for ${client}`,
    text: (client, url) =>
      `Åpne denne lenken for å velge nytt passord og fortsette til ${client}:\n\n${url}\n\n` +
      "Den virker én gang, i 5 minutter. Hvis du ikke ba om den, kan du se bort fra denne e-posten: passordet ditt er uendret.",
  },
  sv_SE: {
    subject: (client) => `Välj ett nytt lösenord för ${client}`,
    text: (client, url) =>
      `Öppna den här länken för att välja ett nytt lösenord och fortsätta till ${client}:\n\n${url}\n\n` +
      "Den fungerar en gång, i 5 minuter. Om du inte bad om den kan du bortse från det här mejlet: ditt lösenord är oförändrat.",
  },
};

export const SIGNIN_MAIL: Record<Locale, SignInMail> = {
  en_US: {
    subject: (client) => `Your sign-in link for ${client}`,
    text: (client, url, context) =>
      `${context ? `${context}\n\n` : ""}Open this link to sign in to ${client}:\n\n${url}\n\n` +
      "It works once, for 5 minutes. If you did not ask for it, you can ignore this mail.",
  },
  nb_NO: {
    subject: (client) => `Innloggingslenken din for ${client}`,
    text: (client, url, context) =>
      `${context ? `${context}\n\n` : ""}Åpne denne lenken for å logge inn på ${client}:\n\n${url}\n\n` +
      "Den virker én gang, i 5 minutter. Hvis du ikke ba om den, kan du se bort fra denne e-posten.",
  },
  sv_SE: {
    subject: (client) => `Din inloggningslänk för ${client}`,
    text: (client, url, context) =>
      `${context ? `${context}\n\n` : ""}Öppna den här länken för att logga in på ${client}:\n\n${url}\n\n` +
      "Den fungerar en gång, i 5 minuter. Om du inte bad om den kan du bortse från det här mejlet.",
  },
};
