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
