import { z } from "@hono/zod-openapi";
import { invalidInput } from "./errors.js";
import { DEFAULT_DETAIL_PAGE_SIZE, MAX_DETAIL_PAGE_SIZE } from "./page-sizes.js";
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

export const invalidCursor = () =>
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

/**
 * A page query with its own default and maximum size, in the same shape as PageQuery. Lists of one
 * run's parts (its steps, a trace's spans) take longer pages: they are mostly read whole.
 */
export function createPageQuery(defaultSize: number, maxSize: number) {
  return z.object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(maxSize)
      .default(defaultSize)
      .openapi({ description: `Page size, 1-${maxSize} (default ${defaultSize})` }),
    cursor: PageQuery.shape.cursor,
  });
}

/** Paging of one execution's steps and one trace's spans. */
export const DetailPageQuery = createPageQuery(DEFAULT_DETAIL_PAGE_SIZE, MAX_DETAIL_PAGE_SIZE);

/** A decoded (sequence number, uuid) keyset cursor, e.g. of a step: validated like a time cursor. */
export interface SeqCursor {
  seq: number;
  id: string;
}

export function decodeSeqCursor(raw: string | undefined): SeqCursor | undefined {
  const cursor = decodeCursor(raw);
  if (!cursor) return undefined;
  const seq = cursor.k;
  // seq is a Postgres int4.
  if (typeof seq !== "number" || !Number.isInteger(seq) || Math.abs(seq) > 2_147_483_647)
    throw invalidCursor();
  if (!z.uuid().safeParse(cursor.id).success) throw invalidCursor();
  return { seq, id: cursor.id };
}

export const seqCursorOf = (seq: number, id: string): KeysetCursor => ({ k: seq, id });
