import { z } from "@hono/zod-openapi";
import { invalidInput } from "./errors.js";
import { isStorableDate, isStorableText } from "./schemas/common.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export const PageQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .openapi({
      description: `Page size, 1-${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`,
    }),
  cursor: z.string().max(500).optional().openapi({ description: "`next_cursor` of the previous page" }),
});

export const NextCursor = z
  .string()
  .nullable()
  .openapi({ description: "Opaque cursor of the next page; null on the last page" });

/**
 * Keyset cursor: the sort key of the last row of a page, opaque to clients (base64url JSON).
 * Keyset (not offset) paging stays correct while rows are inserted ahead of the cursor.
 */
export interface KeysetCursor {
  /** Sort value of the last row (ISO timestamp, number or string). */
  k: string | number;
  /** Tie-breaker: the last row's id. */
  id: string;
}

export function encodeCursor(cursor: KeysetCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString("base64url");
}

const invalidCursor = () =>
  invalidInput("cursor is not valid; pass the next_cursor of a previous page", [
    { path: "cursor", message: "invalid cursor" },
  ]);

/** Cursors are client-held, so decoding checks they can reach Postgres (no NUL in a text key). */
export function decodeCursor(raw: string | undefined): KeysetCursor | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
    if (
      typeof parsed === "object" &&
      parsed !== null &&
      "k" in parsed &&
      "id" in parsed &&
      (typeof parsed.k === "number" || (typeof parsed.k === "string" && isStorableText(parsed.k))) &&
      typeof parsed.id === "string" &&
      isStorableText(parsed.id)
    ) {
      return { k: parsed.k, id: parsed.id };
    }
  } catch {
    // fall through
  }
  throw invalidCursor();
}

/** Splits `limit + 1` fetched rows into a page and the cursor of the next one. */
export function toPage<T>(rows: T[], limit: number, cursorOf: (row: T) => KeysetCursor) {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  const nextCursor = rows.length > limit && last !== undefined ? encodeCursor(cursorOf(last)) : null;
  return { items, nextCursor };
}

/** A decoded (timestamp, id) keyset cursor, validated so a forged cursor is a 400, never a DB error. */
export interface TimeCursor {
  at: Date;
  id: string;
}

export function decodeTimeCursor(
  raw: string | undefined,
  options: { uuidId?: boolean } = {},
): TimeCursor | undefined {
  const cursor = decodeCursor(raw);
  if (!cursor) return undefined;
  const at = new Date(String(cursor.k));
  const idOk = options.uuidId === false ? cursor.id.length <= 400 : z.uuid().safeParse(cursor.id).success;
  if (!isStorableDate(at) || !idOk) throw invalidCursor();
  return { at, id: cursor.id };
}

export const timeCursorOf = (at: Date, id: string): KeysetCursor => ({ k: at.toISOString(), id });
