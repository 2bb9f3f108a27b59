import { describe, expect, it } from "vitest";
import { matchesFilter } from "./match.js";

describe("matchesFilter", () => {
  it("matches subsets, deeply", () => {
    expect(matchesFilter({ a: 1, b: { c: 2, d: 3 } }, {})).toBe(true);
    expect(matchesFilter({ a: 1, b: { c: 2, d: 3 } }, { b: { c: 2 } })).toBe(true);
    expect(matchesFilter({ a: 1 }, { a: 2 })).toBe(false);
    expect(matchesFilter({ a: 1 }, { b: 1 })).toBe(false);
    expect(matchesFilter({ tags: ["x", "y"] }, { tags: ["x", "y"] })).toBe(true);
    expect(matchesFilter({ tags: ["x", "y"] }, { tags: ["x"] })).toBe(false);
    expect(matchesFilter({ a: null }, { a: null })).toBe(true);
    expect(matchesFilter("text", { a: 1 })).toBe(false);
  });
});
