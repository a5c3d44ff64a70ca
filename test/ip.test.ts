import { describe, expect, it } from "vitest";
import { canonicalIp, ipAllowed } from "../src/http/ip";

describe("one spelling per IP address", () => {
  it.each([
    ["2001:db8::1", "2001:db8:0:0:0:0:0:1"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:1"],
    ["2001:0db8:0000::0001", "2001:db8:0:0:0:0:0:1"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["::1", "0:0:0:0:0:0:0:1"],
    ["::", "0:0:0:0:0:0:0:0"],
    ["1::", "1:0:0:0:0:0:0:0"],
    ["::1.2.3.4", "0:0:0:0:0:0:102:304"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:c000:0201", "192.0.2.1"],
    ["192.0.2.1", "192.0.2.1"],
    [" 127.0.0.1 ", "127.0.0.1"],
  ])("%s is %s", (text, canonical) => {
    expect(canonicalIp(text)).toBe(canonical);
  });

  it.each([
    "",
    "256.1.1.1",
    "1.2.3",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7::8",
    "1::2::3",
    ":1",
    "1:::2",
    "12345::",
    "g::1",
    "::ffff:1.2.3.999",
    "fe80::1%eth0",
  ])("%j is not an address", (text) => {
    expect(canonicalIp(text)).toBeNull();
  });

  it("matches allow-list entries however either side spells them, and refuses what is not an address", () => {
    expect(ipAllowed(["2001:db8:0:0:0:0:0:1"], "2001:DB8::1")).toBe(true);
    expect(ipAllowed(["192.0.2.1"], "::ffff:192.0.2.1")).toBe(true);
    expect(ipAllowed(["2001:db8::1"], "2001:db8::2")).toBe(false);
    expect(ipAllowed(["192.0.2.1"], "not-an-ip")).toBe(false);
    expect(ipAllowed(["192.0.2.1"], null)).toBe(false);
    expect(ipAllowed([], null)).toBe(true);
  });
});
