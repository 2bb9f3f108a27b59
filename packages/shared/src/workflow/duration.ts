/** A duration: milliseconds, or a string such as "500ms", "30s", "5m", "2h", "1d", "1h30m". */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

export function parseDuration(value: Duration): number {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0)
      throw new TypeError(`invalid duration ${value}: use milliseconds >= 0`);
    return Math.round(value);
  }
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)/g)];
  const consumed = parts.map((p) => p[0]).join("");
  if (parts.length === 0 || consumed.replace(/\s/g, "") !== trimmed.replace(/\s/g, "")) {
    throw new TypeError(`invalid duration "${value}": use e.g. "500ms", "30s", "5m", "2h", "1d"`);
  }
  return Math.round(parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit!]!, 0));
}
