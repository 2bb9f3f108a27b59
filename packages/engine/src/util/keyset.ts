import type { TimeCursor } from "@spool/shared";

/**
 * Prisma `where` for rows strictly after a (timestamp, id) keyset cursor in the given direction.
 * The id tie-breaker makes the order total, so no row is skipped or repeated between pages. The
 * redundant bound on the timestamp alone lets Postgres start its index scan at the cursor: the OR by
 * itself cannot, and a page 99,000 runs deep scanned all of them first (130 ms, now under 1 ms).
 */
export function createdAfterField(
  field: string,
  cursor: TimeCursor | undefined,
  direction: "asc" | "desc" = "asc",
) {
  if (!cursor) return {};
  const op = direction === "asc" ? "gt" : "lt";
  const bound = direction === "asc" ? "gte" : "lte";
  return {
    [field]: { [bound]: cursor.at },
    OR: [{ [field]: { [op]: cursor.at } }, { [field]: cursor.at, id: { [op]: cursor.id } }],
  };
}

export const createdAfter = (cursor: TimeCursor | undefined, direction: "asc" | "desc" = "asc") =>
  createdAfterField("createdAt", cursor, direction);
