// Errors a workflow author throws or catches. They cross process boundaries as JSON (SerializedError).

/** Thrown from a step or workflow: fail now, skip remaining retries. */
export class NonRetryableError extends Error {
  override name = "NonRetryableError";
}

/** Thrown from a step: retry, but not before `retryAfterMs`. */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/** A waitForEvent or suspend that reached its timeout. */
export class StepTimeoutError extends Error {
  override name = "StepTimeoutError";
}

/** A child workflow started with ctx.step.invoke failed or was cancelled. */
export class ChildWorkflowError extends Error {
  override name = "ChildWorkflowError";
  constructor(
    message: string,
    readonly childExecutionId: string,
    readonly childError: SerializedError | null,
  ) {
    super(message);
  }
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** The step whose failure failed the run, when it was a step. */
  step_key?: string;
  non_retryable?: boolean;
}

export function serializeError(err: unknown, extra: Partial<SerializedError> = {}): SerializedError {
  if (err instanceof Error) {
    return {
      name: err.name,
      message: err.message,
      ...(err.stack ? { stack: err.stack } : {}),
      ...(err instanceof NonRetryableError ? { non_retryable: true } : {}),
      ...extra,
    };
  }
  return {
    name: "Error",
    message: typeof err === "string" ? err : (JSON.stringify(err) ?? String(err)),
    ...extra,
  };
}

/** Rebuilds a thrown error from its stored form, keeping the user-facing class where we own it. */
export function deserializeError(stored: SerializedError): Error {
  const err =
    stored.name === "NonRetryableError"
      ? new NonRetryableError(stored.message)
      : stored.name === "StepTimeoutError"
        ? new StepTimeoutError(stored.message)
        : new Error(stored.message);
  if (!(err instanceof NonRetryableError) && !(err instanceof StepTimeoutError)) err.name = stored.name;
  if (stored.stack) err.stack = stored.stack;
  return err;
}
