import { createBatcher } from "../agents/batcher.js";
import type { StepRecord } from "../runtime/journal.js";
import type { ExecutionRef } from "./record-spans.js";
import type { Traces } from "./traces.js";

/**
 * Step spans of one running execution, written shortly after each step finishes (batched), so a
 * worker that dies mid-run leaves the spans of the steps it finished.
 */
export function createSpanWriter(traces: Traces, execution: ExecutionRef, onError: (err: unknown) => void) {
  const batcher = createBatcher<StepRecord>(
    100,
    (records) => traces.recordSteps(execution, records),
    onError,
  );
  return { record: batcher.add, flush: batcher.flush, take: batcher.take };
}
