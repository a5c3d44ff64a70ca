import { vi } from "vitest";

/**
 * Captures the links the console mailer prints (the local mailer; tests run as development).
 * Restored with vi.restoreAllMocks().
 */
export function mailbox() {
  const log = vi.spyOn(console, "log");
  return {
    /** The newest link sent to `email`, waiting for it (the login page's are made by the queue's consumer). */
    link(email: string): Promise<string> {
      return vi.waitFor(
        () => {
          const printed = log.mock.calls
            .map((call) => String(call[0]))
            .filter((text) => text.includes(`mail to ${email}:`));
          const url = /https:\/\/accounts\.test\/oauth\/signin\?token=[A-Za-z0-9_-]+/.exec(printed.at(-1) ?? "")?.[0];
          if (!url) throw new Error(`no link was mailed to ${email}`);
          return url.replace("https://accounts.test", "");
        },
        { timeout: 10_000 },
      );
    },
    printed: () => log.mock.calls.map((call) => String(call[0])).join("\n"),
  };
}
