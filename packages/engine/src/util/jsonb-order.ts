/**
 * A JSON value as Postgres's jsonb gives it back: each object's keys in jsonb's order (shorter first,
 * in UTF-8 bytes, then byte-wise). A run replayed from its stored input then sees the same key order
 * as the first run that was handed its input before the insert. (JavaScript still enumerates
 * integer-like keys first, whichever way an object is built: the same for both.)
 */
export function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value).map((key) => ({ key, bytes: Buffer.from(key) }));
  keys.sort((a, b) => a.bytes.length - b.bytes.length || Buffer.compare(a.bytes, b.bytes));
  // fromEntries defines each key as an own property (`__proto__` included, as JSON.parse does).
  return Object.fromEntries(
    keys.map(({ key }) => [key, inJsonbOrder((value as Record<string, unknown>)[key])]),
  );
}
