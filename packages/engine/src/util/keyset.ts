import type { TimeCursor } from "@spool/shared";

/**
 * Prisma `where` for rows strictly after a (timestamp, id) keyset cursor in the given direction.
 * The id tie-breaker makes the order total, so no row is skipped or repeated between pages.
 */
export function createdAfterField(
  field: string,
  cursor: TimeCursor | undefined,
  direction: "asc" | "desc" = "asc",
) {
  if (!cursor) return {};
  const op = direction === "asc" ? "gt" : "lt";
  return {
    OR: [{ [field]: { [op]: cursor.at } }, { [field]: cursor.at, id: { [op]: cursor.id } }],
  };
}

export const createdAfter = (cursor: TimeCursor | undefined, direction: "asc" | "desc" = "asc") =>
  createdAfterField("createdAt", cursor, direction);
