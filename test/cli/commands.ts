/** How the CLI tests run the project's commands: as `npm run` would, with the project's own binaries. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

/** A binary of the project's node_modules, so the tests do not depend on PATH. */
export const bin = (name: string) => resolve("node_modules/.bin", name);

const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }).scripts;

/** The command and arguments of an npm script (`node` being the Node that runs the tests). */
export function npmScript(name: string, ...extra: string[]): [string, string[]] {
  const [command, ...args] = scripts[name]!.split(" ");
  return [command === "node" ? process.execPath : bin(command!), [...args, ...extra]];
}
