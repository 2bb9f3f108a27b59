import type { ExecutionStatus } from "../types";

/** A run's status as words; the colour only repeats what the text says. */
export function StatusBadge({ status }: { status: ExecutionStatus | string }) {
  return <span className={`badge badge-${status}`}>{status}</span>;
}
