/**
 * The documentation works in a clone: every relative link in README.md, CHANGELOG.md and docs/
 * names a file of the repository and, with a `#fragment`, one of that page's headings (as GitHub
 * makes their anchors); nothing points outside the repository (`../shared/…`).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

const PAGES = [
  "README.md",
  "CHANGELOG.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => join("docs", name)),
];

/** What a clone has: the files git tracks (an ignored file such as .dev.vars is no link target). */
const TRACKED = new Set(execFileSync("git", ["ls-files"], { encoding: "utf8" }).split("\n").filter(Boolean));

/** Whether `path` (relative to the repository, normalized) is a tracked file or a folder holding one. */
function inClone(path: string): boolean {
  const folder = path.replace(/\/$/, "");
  return TRACKED.has(folder) || [...TRACKED].some((file) => file.startsWith(`${folder}/`));
}

/** The page's text outside fenced code blocks, where a bracket is shell, not a link. */
function prose(page: string): string {
  return readFileSync(page, "utf8").replace(/^```[\s\S]*?^```/gm, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

function anchorsOf(page: string): Set<string> {
  return new Set([...prose(page).matchAll(/^#+\s+(.+)$/gm)].map(([, heading]) => anchor(heading!)));
}

function linksOf(page: string): string[] {
  return [...prose(page).matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target!);
}

describe("the documentation's links", () => {
  it.each(PAGES)("%s: every relative link names a file and heading of the repository", (page) => {
    const broken: string[] = [];
    for (const link of linksOf(page)) {
      if (/^[a-z]+:/i.test(link)) continue;
      const [path, fragment] = link.split("#") as [string, string | undefined];
      const target = path === "" ? page : normalize(join(dirname(page), decodeURIComponent(path)));
      if (!inClone(target)) {
        broken.push(`${link}: no such file in the repository`);
      } else if (fragment !== undefined && target.endsWith(".md") && !anchorsOf(target).has(fragment)) {
        broken.push(`${link}: no such heading in ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("finds links to check, so the check above can fail", () => {
    expect(linksOf("README.md").filter((link) => link.startsWith("docs/")).length).toBeGreaterThan(5);
  });

  it.each(PAGES)("%s: points nowhere outside the repository", (page) => {
    expect(readFileSync(page, "utf8")).not.toMatch(/\.\.\/shared\//);
  });
});
