import { describe, expect, it } from "vitest";
import { parseTime } from "../src/http/list-query";

/** Monday 2026-11-23 09:30:00 UTC. */
const NOW = Date.UTC(2026, 10, 23, 9, 30) / 1000;
const at = (iso: string) => Date.parse(`${iso}Z`) / 1000;

describe("since and until read times as PHP's strtotime does, in UTC", () => {
  it.each([
    ["now", at("2026-11-23T09:30:00")],
    ["today", at("2026-11-23T00:00:00")],
    ["yesterday", at("2026-11-22T00:00:00")],
    ["tomorrow", at("2026-11-24T00:00:00")],
    ["first day of January", at("2026-01-01T00:00:00")],
    ["last day of next month", at("2026-12-31T09:30:00")],
    ["+1 week", at("2026-11-30T09:30:00")],
    ["-3 days", at("2026-11-20T09:30:00")],
    ["2 weeks ago", at("2026-11-09T09:30:00")],
    ["last monday", at("2026-11-16T00:00:00")],
    ["noon", at("2026-11-23T12:00:00")],
    ["midnight", at("2026-11-23T00:00:00")],
    ["2024-01-31", at("2024-01-31T00:00:00")],
    ["2024-01-31 12:00:00", at("2024-01-31T12:00:00")],
    ["1706659200", 1_706_659_200],
  ])("%s", (text, seconds) => {
    expect(parseTime(text, NOW)).toBe(seconds);
  });

  it.each([
    "garbage",
    "",
    "99999999999999",
    "x".repeat(65),
    "1969-12-31",
    "10000-01-01",
    "2023-02-30",
    "2024-1-5",
    "99999999999999999999",
  ])("refuses %j", (text) => {
    expect(parseTime(text, NOW)).toBeNull();
  });
});
