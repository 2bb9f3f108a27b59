import type { ExecutionStatus } from "@spool/shared";

export { type ExecutionStatus, isTerminal, TERMINAL_STATUSES } from "@spool/shared";

/**
 * The execution state machine: every status and the statuses it may move to. Typed over the whole
 * union, so adding a status does not compile until this table handles it.
 *
 *   queued → running → completed | failed | cancelled
 *   running → waiting (timer, event, child) | suspended (needs resume) → queued
 *   running → queued   (run-level retry, or handed back by a draining or dead worker)
 */
export const TRANSITIONS = {
  queued: ["running", "failed", "cancelled"],
  running: ["completed", "failed", "cancelled", "waiting", "suspended", "queued", "running"],
  waiting: ["queued", "failed", "cancelled"],
  suspended: ["queued", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
} as const satisfies Record<ExecutionStatus, readonly ExecutionStatus[]>;

export const canTransition = (from: ExecutionStatus, to: ExecutionStatus): boolean =>
  (TRANSITIONS[from] as readonly ExecutionStatus[]).includes(to);

/** Every status that may move to `to`. */
export const sourcesOf = (to: ExecutionStatus): ExecutionStatus[] =>
  (Object.keys(TRANSITIONS) as ExecutionStatus[]).filter((from) => canTransition(from, to));

export const NON_TERMINAL: ExecutionStatus[] = ["queued", "running", "waiting", "suspended"];
