/** Execution statuses of the contract. Transitions are owned by packages/engine/src/execution. */
export const EXECUTION_STATUSES = [
  "queued",
  "running",
  "waiting",
  "suspended",
  "completed",
  "failed",
  "cancelled",
] as const;

export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export const TERMINAL_STATUSES = [
  "completed",
  "failed",
  "cancelled",
] as const satisfies readonly ExecutionStatus[];
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export const isTerminal = (status: string): status is TerminalStatus =>
  (TERMINAL_STATUSES as readonly string[]).includes(status);

/**
 * What a `?wait=` long poll waits for: `terminal` (completed, failed, cancelled), or `blocked`:
 * terminal, or parked until something outside answers it (waiting on a timer, event or child;
 * suspended for input), so a script can resume or publish without polling.
 */
export const WAIT_UNTIL = ["terminal", "blocked"] as const;
export type WaitUntil = (typeof WAIT_UNTIL)[number];

export const isWaitOver = (status: string, until: WaitUntil): boolean =>
  isTerminal(status) || (until === "blocked" && (status === "waiting" || status === "suspended"));
