/**
 * Does `data` contain everything in `filter`? Objects match key by key (deeply), anything else by
 * equality. `{}` matches every event.
 */
export function matchesFilter(data: unknown, filter: unknown): boolean {
  if (filter === null || typeof filter !== "object") return Object.is(data, filter);
  if (Array.isArray(filter)) {
    return (
      Array.isArray(data) &&
      data.length === filter.length &&
      filter.every((f, i) => matchesFilter(data[i], f))
    );
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) return false;
  return Object.entries(filter).every(([k, v]) => matchesFilter((data as Record<string, unknown>)[k], v));
}
