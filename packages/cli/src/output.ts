/** What a command writes: a table for people, JSON for scripts (`--json`). */
export interface Output {
  json: boolean;
  /** Whether stdout is a terminal (progress lines redraw in place only there). */
  tty: boolean;
  write(text: string): void;
}

export const stdout = (json: boolean): Output => ({
  json,
  tty: Boolean(process.stdout.isTTY),
  write: (text) => process.stdout.write(text),
});

/** Rows as aligned columns under a header; "-" for empty cells. */
export function table(out: Output, columns: string[], rows: (string | number | null | undefined)[][]): void {
  const cells = [
    columns,
    ...rows.map((r) => r.map((c) => (c === null || c === undefined || c === "" ? "-" : String(c)))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  for (const row of cells) {
    out.write(`${row.map((c, i) => (i === row.length - 1 ? c : (c ?? "").padEnd(widths[i]!))).join("  ")}\n`);
  }
  if (rows.length === 0) out.write("(none)\n");
}

/** A value for a person: JSON on one line, or as it is when short text. */
export const brief = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** `1.2 s`, `340 ms` between two timestamps (null when either is missing). */
export function duration(from: string | null | undefined, to: string | null | undefined): string | null {
  if (!from || !to) return null;
  const ms = Date.parse(to) - Date.parse(from);
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
