import { z } from "@hono/zod-openapi";
import { ERROR_STATUS } from "../errors.js";

// Input Postgres would refuse is refused here first, as a 400 naming the field, never a driver
// error (500) deep in the engine: Postgres stores no U+0000 in text or jsonb and no unpaired UTF-16
// surrogate in jsonb; `integer` columns stop at 2^31-1; timestamps are written and read back as
// RFC 3339 only for years 1-9999. Request schemas build on the pieces below, not on bare z.string().

/** Largest value of a Postgres `integer` (Prisma `Int`) column. */
export const MAX_INT4 = 2_147_483_647;

// With the u flag a well-formed surrogate pair reads as one code point, so only lone halves match.
// (In a text column the driver would not fail on one but silently store U+FFFD: refused as well.)
const LONE_SURROGATE = /\p{Cs}/u;
export const UNSTORABLE_TEXT = "must not contain NUL (\\u0000) or unpaired surrogate characters";
export const isStorableText = (s: string): boolean => !s.includes("\u0000") && !LONE_SURROGATE.test(s);

/** Free text headed for a text column. */
export const Text = z.string().refine(isStorableText, UNSTORABLE_TEXT);

/** Years 1-9999: a JS Date also reaches year 0 and negative years, which Postgres refuses, and years
 * past 9999, which RFC 3339 cannot write. */
export const isStorableDate = (date: Date): boolean => {
  const year = date.getUTCFullYear(); // NaN for an invalid date, failing both bounds
  return year >= 1 && year <= 9999;
};
const storableInstant = (s: string) => isStorableDate(new Date(s));
const YEAR_RANGE = "must fall in the years 0001-9999 (UTC)";

/** RFC 3339 UTC timestamp. */
export const Timestamp = z.iso
  .datetime()
  .refine(storableInstant, YEAR_RANGE)
  .openapi({ example: "2026-11-22T08:00:00.000Z" });
export const NullableTimestamp = Timestamp.nullable();
/** RFC 3339 timestamp with any offset (query bounds such as created_after); its UTC instant must be storable. */
export const OffsetTimestamp = z.iso
  .datetime({ offset: true })
  .refine(storableInstant, YEAR_RANGE)
  .openapi({ example: "2026-11-22T09:00:00+01:00" });

/**
 * Deepest nesting accepted in JSON input: far beyond real data (tool schemas, LLM messages), far short
 * of where the write path fails (a few thousand levels deep, JSON.stringify or Postgres run out of stack).
 */
export const MAX_JSON_DEPTH = 128;

interface JsonNode {
  value: unknown;
  key?: string | number;
  parent?: JsonNode;
  depth: number;
}

const pathOf = (node: JsonNode): (string | number)[] => {
  const path: (string | number)[] = [];
  for (let n: JsonNode | undefined = node; n?.key !== undefined; n = n.parent) path.unshift(n.key);
  return path;
};

/**
 * The first place a JSON value cannot be stored as jsonb (NUL or a lone surrogate in a key or
 * string, nesting past MAX_JSON_DEPTH), as a path below the value and a message; undefined if none.
 * Iterative, so hostile nesting cannot overflow the stack. Too deep is reported on the value itself:
 * a path 128 levels long would only bury the message.
 */
export function findUnstorableJson(
  value: unknown,
): { path: (string | number)[]; message: string } | undefined {
  const stack: JsonNode[] = [{ value, depth: 0 }];
  for (let node = stack.pop(); node; node = stack.pop()) {
    const v = node.value;
    if (typeof v === "string") {
      if (!isStorableText(v)) return { path: pathOf(node), message: UNSTORABLE_TEXT };
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    if (node.depth >= MAX_JSON_DEPTH) {
      return { path: [], message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` };
    }
    const isArray = Array.isArray(v);
    for (const [key, child] of Object.entries(v)) {
      if (!isStorableText(key)) return { path: pathOf(node), message: `keys ${UNSTORABLE_TEXT}` };
      stack.push({ value: child, key: isArray ? Number(key) : key, parent: node, depth: node.depth + 1 });
    }
  }
  return undefined;
}

const refuseUnstorableJson = (value: unknown, ctx: z.RefinementCtx) => {
  const problem = findUnstorableJson(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
};

/** Free-form JSON object (workflow input, event data, metadata), storable as jsonb. */
export const JsonObject = z
  .record(z.string(), z.unknown())
  .superRefine(refuseUnstorableJson)
  .openapi({ type: "object", additionalProperties: true });
export const JsonValue = z
  .unknown()
  .superRefine(refuseUnstorableJson)
  .openapi({ description: "Any JSON value" });

export const ErrorResponse = z
  .object({
    error: z.string().openapi({ example: "workflow 'x' not found" }),
    error_type: z
      .enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]])
      .openapi({ example: "NOT_FOUND" }),
    details: z.unknown().optional(),
  })
  .openapi("ErrorResponse");

export const SuccessResponse = z.object({ success: z.literal(true) }).openapi("SuccessResponse");

/** A dependency's health as the public health endpoint shows it: the kind of failure, never its detail. */
export const DEPENDENCY_STATUSES = ["ok", "error: timeout", "error: unreachable"] as const;
export type DependencyStatus = (typeof DEPENDENCY_STATUSES)[number];
const DependencyStatusEnum = z.enum(DEPENDENCY_STATUSES).openapi("DependencyStatus");

export const HealthResponse = z
  .object({
    status: z.enum(["healthy", "unhealthy"]),
    version: z.string(),
    checks: z.object({ postgres: DependencyStatusEnum, redis: DependencyStatusEnum }),
  })
  .openapi("HealthResponse");
