import type { Execution } from "@spool/db";
import type { Traces } from "./traces.js";

/** How long a run must be going before its trace shows it running. */
const RUNNING_SPAN_DELAY_MS = 250;

/**
 * A run still going after a moment shows as running in its trace; short runs skip that write (it
 * cost a third of a no-op run's database work). It is one statement: under load every run lasts
 * past the delay, and a costlier write made the worker slower still. Every transition that ends the
 * worker's turn writes the trace itself; `settle` makes sure this write is done or never starts
 * before that.
 */
export function showRunningAfterDelay(traces: Traces, started: Execution, onError: (err: unknown) => void) {
  let write: Promise<void> | undefined;
  const timer = setTimeout(() => {
    // Traces are observability: a failed span write is logged, never allowed to fail the run.
    write = traces.showRunning(started).catch(onError);
  }, RUNNING_SPAN_DELAY_MS);
  return {
    settle: async () => {
      clearTimeout(timer);
      await write;
    },
  };
}
