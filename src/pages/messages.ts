/** The browser pages' texts, per locale. */
import type { Locale } from "./locale";

type Messages = {
  linkInvalid: { title: string; text: string };
  linkExpired: { title: string; text: string };
  linkUsed: { title: string; text: string };
  signedOut: { title: string; text: string };
};

export const MESSAGES: Record<Locale, Messages> = {
  en_US: {
    linkInvalid: { title: "This link does not work", text: "Go back to the app and open the page again." },
    linkExpired: { title: "This link has expired", text: "Go back to the app and open the page again." },
    linkUsed: {
      title: "This link has already been used",
      text: "A link signs in once. Go back to the app and open the page again.",
    },
    signedOut: { title: "You are signed out", text: "You can close this page." },
  },
  nb_NO: {
    linkInvalid: { title: "Denne lenken virker ikke", text: "Gå tilbake til appen og åpne siden på nytt." },
    linkExpired: { title: "Denne lenken er utløpt", text: "Gå tilbake til appen og åpne siden på nytt." },
    linkUsed: {
      title: "Denne lenken er allerede brukt",
      text: "En lenke logger inn én gang. Gå tilbake til appen og åpne siden på nytt.",
    },
    signedOut: { title: "Du er logget ut", text: "Du kan lukke denne siden." },
  },
  sv_SE: {
    linkInvalid: { title: "Den här länken fungerar inte", text: "Gå tillbaka till appen och öppna sidan igen." },
    linkExpired: { title: "Den här länken har gått ut", text: "Gå tillbaka till appen och öppna sidan igen." },
    linkUsed: {
      title: "Den här länken har redan använts",
      text: "En länk loggar in en gång. Gå tillbaka till appen och öppna sidan igen.",
    },
    signedOut: { title: "Du är utloggad", text: "Du kan stänga den här sidan." },
  },
};
