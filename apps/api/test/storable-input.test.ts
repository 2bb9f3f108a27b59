// The shared request schemas refuse what Postgres cannot store, and only that: edge values just inside
// the limits must still pass. (The HTTP side, every route, is in errors.test.ts.)
import {
  decodeTimeCursor,
  encodeCursor,
  findUnstorableJson,
  HeartbeatBody,
  JsonObject,
  ListExecutionsQuery,
  MAX_INT4,
  MAX_JSON_DEPTH,
  Text,
  Timestamp,
  timeCursorOf,
} from "@spool/shared";
import { describe, expect, it } from "vitest";

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

describe("storable input", () => {
  it("text: refuses NUL and lone surrogates, keeps emoji and other control characters", () => {
    expect(Text.safeParse("tab\tand newline\n and 💩 and \u0001").success).toBe(true);
    for (const bad of ["a\u0000", "\ud800", "x\udc00y", "\udca9\ud83d"]) {
      expect(Text.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it("JSON: points at the offending string or key, allows MAX_JSON_DEPTH levels", () => {
    expect(findUnstorableJson({ a: [{ b: "💩" }], n: null, t: true, x: 1.5 })).toBeUndefined();
    expect(findUnstorableJson({ a: [1, { b: "x\u0000" }] })?.path).toEqual(["a", 1, "b"]);
    expect(findUnstorableJson({ a: { "k\u0000": 1 } })?.path).toEqual(["a"]);
    expect(findUnstorableJson("\ud800")?.path).toEqual([]);
    expect(JsonObject.safeParse({ a: nested(MAX_JSON_DEPTH - 1) }).success).toBe(true);
    expect(JsonObject.safeParse({ a: nested(MAX_JSON_DEPTH) }).success).toBe(false);
    // Deep enough to overflow a recursive walk: still a plain refusal.
    expect(findUnstorableJson(nested(200_000))?.message).toMatch(/deeper than/);
  });

  it("integers stop at the 32-bit column limit", () => {
    expect(HeartbeatBody.safeParse({ running: MAX_INT4 }).success).toBe(true);
    expect(HeartbeatBody.safeParse({ running: MAX_INT4 + 1 }).success).toBe(false);
  });

  it("timestamps and cursors take years 1-9999 only", () => {
    expect(Timestamp.safeParse("0001-01-01T00:00:00Z").success).toBe(true);
    expect(Timestamp.safeParse("9999-12-31T23:59:59.999Z").success).toBe(true);
    expect(Timestamp.safeParse("0000-12-31T23:59:59Z").success).toBe(false);
    const query = (created_after: string) => ListExecutionsQuery.safeParse({ created_after }).success;
    expect(query("2026-01-01T10:00:00+05:30")).toBe(true);
    expect(query("0001-01-01T00:30:00+01:00")).toBe(false);
    expect(query("9999-12-31T23:00:00-05:00")).toBe(false);

    const id = "00000000-0000-4000-8000-000000000000";
    const edge = new Date("0001-01-01T00:00:00.000Z");
    expect(decodeTimeCursor(encodeCursor(timeCursorOf(edge, id)))).toEqual({ at: edge, id });
    for (const k of [
      "0000-01-01T00:00:00.000Z",
      "-000001-01-01T00:00:00.000Z",
      "+010000-01-01T00:00:00.000Z",
    ]) {
      expect(() => decodeTimeCursor(encodeCursor({ k, id })), k).toThrow(/cursor is not valid/);
    }
    expect(() =>
      decodeTimeCursor(encodeCursor({ k: edge.toISOString(), id: "a\u0000" }), { uuidId: false }),
    ).toThrow(/cursor is not valid/);
  });
});
