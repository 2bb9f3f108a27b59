// What a job runner needs from the place a run lives. Two implementations: Postgres, for in-cluster
// workers (execution/postgres-host.ts), and the API over HTTP, for remote workers (http-host.ts).
// This folder imports no database and no queue: the SDK's remote worker bundles it.
import type { ExecutionInfo, SerializedError } from "@spool/shared";
import type { Journal, NewStepResult, NewWait, StepRecord } from "../runtime/journal.js";

/** A run a host has started for this worker: what the replay needs to know of it. */
export interface StartedRun {
  execution: ExecutionInfo;
  input: unknown;
}

/** A run-level retry request: the engine retries when `retryable` and attempts are left. */
export interface RetryRequest {
  retryable: boolean;
  /** Retries the workflow allows after its first attempt (`defineWorkflow({ retries })`). */
  maxRetries: number;
}

/** How a failed attempt ended: retried later, failed for good, or not ours any more. */
export type FailOutcome = "retrying" | "failed" | "not_ours";

/**
 * One run, as one worker holds it. Every settle verb is a single engine transition guarded by the
 * worker's claim: when the run is no longer this worker's (cancelled, timed out, handed to another
 * worker), it changes nothing and reports `false` / `not_ours`.
 */
export interface RunHost {
  /** Takes the run: null when the job is stale, or the run is held by another live worker. */
  start(): Promise<StartedRun | null>;
  /** Stored step results and open waits. */
  journal(): Promise<Journal>;
  /** A live event of the run (text deltas, tool calls); the returned promise settles once written. */
  publish(event: { eventType: string; data: Record<string, unknown>; now?: boolean }): void | Promise<void>;
  /** A step this worker executed, for the run's trace. */
  recordStep(record: StepRecord): void;
  /** Writes whatever `publish` and `recordStep` still buffer. */
  flush(): Promise<void>;
  // Each settle verb lands what `publish` and `recordStep` still buffer before its outcome, or with
  // it (in the same transaction): a client that sees the run settled finds its whole stream and trace.
  /**
   * `lastStep`: a completed step the replay held back (only when `storesLastStep`), stored first
   * with first-write-wins. Throws StepSupersededError when another worker's result for it won (the
   * run is replayed), ExecutionAbortedError when the run is no longer this worker's.
   */
  complete(result: unknown, lastStep?: NewStepResult): Promise<boolean>;
  /** The host stores a held-back last step with the completion (ReplayOptions.holdLastWrite). */
  readonly storesLastStep?: boolean;
  fail(error: SerializedError, retry: RetryRequest): Promise<FailOutcome>;
  block(waits: NewWait[]): Promise<boolean>;
  /**
   * This worker does not have the run's workflow: the engine hands it back when another online
   * worker serves it, and fails it with WorkflowNotLoadedError when none does.
   */
  notLoaded(): Promise<"handed_back" | "failed" | "not_ours">;
}

/** pino's call shape, so the runner logs through whatever logger its process has. */
export interface RunnerLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
  child(fields: Record<string, unknown>): RunnerLogger;
}
