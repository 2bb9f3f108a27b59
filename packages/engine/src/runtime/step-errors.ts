// Errors of the replay runtime: misuse, the step key a failure came from, and stored failures
// rebuilt into the errors a workflow catches.
import { ChildWorkflowError, deserializeError, type SerializedError } from "@spool/shared";
import type { JournalStep } from "./journal.js";
import { StepResultTooLargeError } from "./result-size.js";

/** A workflow bug (duplicate key, bad key): retrying cannot help. */
export class StepMisuseError extends Error {
  override name = "StepMisuseError";
}
export const isMisuse = (err: unknown) => err instanceof StepMisuseError;

const STEP_KEY = Symbol("spool.stepKey");
export function withStepKey(err: unknown, key: string): unknown {
  if (err && typeof err === "object" && !(STEP_KEY in err)) {
    Object.defineProperty(err, STEP_KEY, { value: key, enumerable: false });
  }
  return err;
}
export const stepKeyOf = (err: unknown): Partial<SerializedError> =>
  err && typeof err === "object" && STEP_KEY in err
    ? { step_key: (err as Record<symbol, string>)[STEP_KEY] }
    : {};

export function rebuildError(stored: JournalStep): Error {
  const e = stored.error ?? { name: "Error", message: `step '${stored.stepKey}' failed` };
  // Replayed, it stays what it was: not retryable (the same step would return as much again).
  if (e.name === "StepResultTooLargeError") {
    const err = new StepResultTooLargeError(e.message);
    if (e.stack) err.stack = e.stack;
    return err;
  }
  if (stored.kind === "invoke" && e.name !== "StepTimeoutError") {
    const childId = (stored.output as { child_execution_id?: string } | null)?.child_execution_id ?? "";
    return new ChildWorkflowError(e.message, childId, e);
  }
  return deserializeError(e);
}
