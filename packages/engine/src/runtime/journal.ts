import { isDeepStrictEqual } from "node:util";
import type { SerializedError } from "@spool/shared";

export type StepKind = "run" | "sleep" | "event" | "suspend" | "invoke" | "now" | "uuid" | "llm" | "tool";
export type WaitKind = "sleep" | "event" | "suspend" | "invoke";

/** A step result as stored: first completed write wins. */
export interface JournalStep {
  stepKey: string;
  seq: number;
  kind: string;
  status: "completed" | "failed";
  output: unknown;
  error: SerializedError | null;
  attempts: number;
}

/** A wait the execution is still parked on. */
export interface JournalWait {
  stepKey: string;
  seq: number;
  kind: string;
  wakeAt: Date | null;
}

export interface NewStepResult {
  stepKey: string;
  seq: number;
  kind: StepKind;
  status: "completed" | "failed";
  output?: unknown;
  error?: SerializedError;
  attempts: number;
  startedAt: Date;
}

/** A wait the runtime blocked on; the engine persists it when the run parks. */
export interface NewWait {
  stepKey: string;
  seq: number;
  kind: WaitKind;
  wakeAt: Date | null;
  /** event, and a remote worker's suspend: the topic whose events answer the wait. */
  topic?: string;
  /** Only an event of this type answers it (a remote worker's suspend: `resume_<step_key>`). */
  eventType?: string;
  match?: Record<string, unknown>;
  /** event: events after this project sequence may answer it (read when the run reached the step). */
  afterSequence?: bigint;
  payload?: unknown;
  child?: { workflowId: string; input: unknown; queueName?: string };
}

/** What the runtime reads and writes of one execution's durable history. */
export interface Journal {
  steps: ReadonlyMap<string, JournalStep>;
  waits: ReadonlyMap<string, JournalWait>;
  /**
   * Stores a step result and returns the one that won (a concurrent duplicate delivery may have
   * stored first). Throws ExecutionAbortedError when the execution is no longer this worker's to run.
   */
  saveStep(step: NewStepResult): Promise<JournalStep>;
  /**
   * The most bytes of JSON a result may take (SPOOL_MAX_STEP_RESULT_BYTES), when the journal knows
   * it: the replay then fails an oversized step or run without sending its result anywhere. Unset
   * (a remote worker's journal), the store decides: saveStep throws StepResultTooLargeError.
   */
  readonly maxResultBytes?: number;
  /**
   * The project's current event sequence. A waitForEvent step reads it when first reached, so an
   * event published between then and the run parking still answers it.
   */
  eventCursor(): Promise<bigint>;
}

/** A step this replay executed (not replayed), as the worker records it on the trace. */
export interface StepRecord {
  stepKey: string;
  kind: StepKind;
  status: "completed" | "failed";
  attempts: number;
  startedAt: Date;
  endedAt: Date;
  input?: unknown;
  output?: unknown;
  error?: SerializedError;
  /** Span attributes (e.g. an LLM call's model and token usage). */
  attributes?: Record<string, unknown>;
}

/** How a step describes itself on its trace span. */
export interface StepTrace {
  input?: unknown;
  /** From the step's stored output: attributes, and an error when the output reports a failure. */
  describe?: (output: unknown) => { attributes?: Record<string, unknown>; error?: SerializedError };
}

/** The execution was cancelled, timed out, or handed to another worker: stop without writing more. */
export class ExecutionAbortedError extends Error {
  override name = "ExecutionAbortedError";
}

/**
 * A step result the replay held back (see ReplayOptions.holdLastWrite) lost to another worker's
 * stored result for the same step: the workflow went on with a value that is not the stored one, so
 * the run must be replayed from its journal (nothing ran since but the workflow's own code).
 */
export class StepSupersededError extends Error {
  override name = "StepSupersededError";
  constructor(stepKey: string) {
    super(`step '${stepKey}' was stored by another worker first; the run is replayed from its journal`);
  }
}

/** Whether a stored step is the held-back result it was written from (first write wins). */
export function storedAsWritten(stored: JournalStep, written: NewStepResult): boolean {
  return stored.status === written.status && isDeepStrictEqual(stored.output ?? null, written.output ?? null);
}

export type ReplayOutcome =
  /** `lastStep`: a completed step result held back to be stored with the completion. */
  | { type: "completed"; result: unknown; lastStep?: NewStepResult }
  /** A held-back step result lost to another worker's (StepSupersededError): replay again. */
  | { type: "superseded"; reason: string }
  | { type: "failed"; error: SerializedError; retryable: boolean }
  | { type: "blocked"; waits: NewWait[] }
  | { type: "aborted"; reason: string };
