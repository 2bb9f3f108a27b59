// The cap on what a run stores as a result: each step's result and the run's own, measured as the
// bytes of their JSON (SPOOL_MAX_STEP_RESULT_BYTES). One oversized result would otherwise be held in
// the worker's memory, written to Postgres, and read back whole by every replay and every reader.
import { DEFAULT_MAX_STEP_RESULT_BYTES, NonRetryableError } from "@spool/shared";

/** A step returned more JSON than the limit: the step fails and its result is not stored. */
export class StepResultTooLargeError extends NonRetryableError {
  override name = "StepResultTooLargeError";
  constructor(
    message: string,
    /** The result's size and the limit, in bytes (unknown when rebuilt from a stored failure). */
    readonly sizes?: { bytes: number; maxBytes: number },
  ) {
    super(message);
  }
}

/** A workflow returned more JSON than the limit: the run fails and its result is not stored. */
export class WorkflowResultTooLargeError extends NonRetryableError {
  override name = "WorkflowResultTooLargeError";
  constructor(
    message: string,
    readonly sizes?: { bytes: number; maxBytes: number },
  ) {
    super(message);
  }
}

export type ResultTooLargeError = StepResultTooLargeError | WorkflowResultTooLargeError;

export const isResultTooLarge = (err: unknown): err is ResultTooLargeError =>
  err instanceof StepResultTooLargeError || err instanceof WorkflowResultTooLargeError;

/** The JSON a value is stored as (undefined as null), and its size in bytes (UTF-8). */
export function sizedJson(value: unknown): { json: string; bytes: number } {
  const json: string | undefined = JSON.stringify(value === undefined ? null : value);
  if (json === undefined) throw new TypeError(`a result must be JSON (or undefined), not a ${typeof value}`);
  return { json, bytes: Buffer.byteLength(json, "utf8") };
}

/** `1 MiB`, `10.5 KiB`, `512 bytes`: how the errors state sizes. */
export function formatBytes(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB"];
  let n = bytes;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit++;
  }
  if (unit === 0) return `${bytes} bytes`;
  return `${Math.round(n * 10) / 10} ${units[unit]}`;
}

const over = (bytes: number, limit: number) =>
  `${formatBytes(bytes)} of JSON (${bytes} bytes), over the ${formatBytes(limit)} limit (SPOOL_MAX_STEP_RESULT_BYTES)`;

export const stepResultTooLarge = (stepKey: string, bytes: number, limit: number) =>
  new StepResultTooLargeError(`step '${stepKey}' returned ${over(bytes, limit)}`, { bytes, maxBytes: limit });

export const workflowResultTooLarge = (workflowId: string, bytes: number, limit: number) =>
  new WorkflowResultTooLargeError(`workflow '${workflowId}' returned ${over(bytes, limit)}`, {
    bytes,
    maxBytes: limit,
  });

/**
 * This process's limit for the results it stores. A process that stores results (the worker for its
 * in-cluster runs, the API for what remote workers report) sets it once at start-up from its
 * configuration; a remote worker stores nothing itself and leaves it: Spool refuses what is too
 * large and the runner fails the step (see http-host.ts).
 */
let processLimit = DEFAULT_MAX_STEP_RESULT_BYTES;

export function setMaxResultBytes(bytes: number): void {
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new RangeError(`the result limit must be a positive number of bytes, got ${bytes}`);
  }
  processLimit = bytes;
}

export const maxResultBytes = (): number => processLimit;
