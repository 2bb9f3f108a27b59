import { invalidInput } from "@spool/shared";
import { Cron } from "croner";

/**
 * A validated 5-field cron in an IANA timezone: Unix day-of-week (0-6, 0 = Sunday; names allowed),
 * day-of-month OR day-of-week as classic cron does. DST follows croner: a time skipped by a gap
 * fires at the first valid time after it, a time that occurs twice fires once.
 */
export function parseCron(expression: string, timezone: string): Cron {
  assertTimezone(timezone);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, mode: "5-part", paused: true, domAndDow: false });
  } catch (err) {
    throw invalidInput(`invalid cron '${expression}': ${err instanceof Error ? err.message : String(err)}`, [
      { path: "cron", message: "expected 5 fields: minute hour day-of-month month day-of-week" },
    ]);
  }
  // With no year field, a cron that matches no date from now on matches none ever (e.g. February 30).
  if (cron.nextRun() === null) {
    throw invalidInput(`cron '${expression}' never fires: no date matches it`, [
      { path: "cron", message: "matches no date (e.g. a day that the month does not have)" },
    ]);
  }
  return cron;
}

export function assertTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw invalidInput(`unknown timezone '${timezone}'; use an IANA name such as Europe/Berlin`, [
      { path: "timezone", message: "unknown IANA timezone" },
    ]);
  }
}

/** The first occurrence strictly after `after`. */
export function nextOccurrence(cron: Cron, after: Date): Date | null {
  return cron.nextRun(after);
}

export function upcoming(cron: Cron, after: Date, n: number): Date[] {
  return cron.nextRuns(n, after);
}
