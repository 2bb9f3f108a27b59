// How times, durations and ids read on screen.

const dateTime = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export const formatDateTime = (iso: string) => dateTime.format(new Date(iso));

/** "3 min ago", "in 2 h": the unit that reads best. */
export function formatRelative(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, "second");
  if (abs < 3600) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86_400) return relative.format(Math.round(seconds / 3600), "hour");
  return relative.format(Math.round(seconds / 86_400), "day");
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Milliseconds between two timestamps; to now when the second is missing. */
export const elapsedMs = (from: string, to: string | null | undefined, now = Date.now()) =>
  (to ? new Date(to).getTime() : now) - new Date(from).getTime();

/** The first block of a UUID: enough to tell runs apart in a list (the full id is in the link). */
export const shortId = (id: string) => id.slice(0, 8);

export const isUuid = (s: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

export const pretty = (value: unknown) => (value === undefined ? "" : JSON.stringify(value, null, 2));

/** Parses editor text as a JSON object (what the API takes as input, resume data and event data). */
export function parseJsonObject(
  text: string,
  what: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `${what} is not valid JSON: ${err instanceof Error ? err.message : err}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, message: `${what} must be a JSON object, like {"key": "value"}` };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
