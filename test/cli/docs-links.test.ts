/**
 * The documentation works in a clone: every relative link in README.md, CHANGELOG.md and docs/
 * names a file of the repository and, with a `#fragment`, one of that page's headings (as GitHub
 * makes their anchors); nothing points outside the repository (`../shared/…`).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const PAGES = [
  "README.md",
  "CHANGELOG.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => join("docs", name)),
];

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
  const text = prose(page);
  const inline = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target!);
  const angle = [...text.matchAll(/<([^>\s]+:\/\/[^>\s]+)>/g)].map(([, target]) => target!);
  return [...inline, ...angle];
}

describe("the documentation's links", () => {
  it.each(PAGES)("%s: every relative link names a file and heading of the repository", (page) => {
    const broken: string[] = [];
    for (const link of linksOf(page)) {
      if (/^[a-z]+:/i.test(link)) continue;
      const [path, fragment] = link.split("#") as [string, string | undefined];
      const target = path === "" ? page : join(dirname(page), decodeURIComponent(path));
      if (relative(".", resolve(target)).startsWith("..") || !existsSync(target)) {
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
