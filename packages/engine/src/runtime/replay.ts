import { randomUUID } from "node:crypto";
import {
  type ExecutionInfo,
  NonRetryableError,
  parseDuration,
  type StepApi,
  type StepRunOptions,
  serializeError,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowLogger,
} from "@spool/shared";
import { backoffDelay } from "./backoff.js";
import {
  ExecutionAbortedError,
  type Journal,
  type JournalStep,
  type NewStepResult,
  type NewWait,
  type ReplayOutcome,
  type StepKind,
  type StepRecord,
  StepSupersededError,
  type StepTrace,
  storedAsWritten,
} from "./journal.js";
import {
  StepResultTooLargeError,
  sizedJson,
  stepResultTooLarge,
  workflowResultTooLarge,
} from "./result-size.js";
import { isMisuse, rebuildError, StepMisuseError, stepKeyOf, withStepKey } from "./step-errors.js";
import { llmTrace, runToolStep } from "./tool-step.js";

export { StepMisuseError };

/** Sleeps shorter than this stay in process (a durable timer costs more than it saves). */
export const IN_PROCESS_SLEEP_MS = 1000;
const DEFAULT_STEP_RETRIES = 3;

export interface ReplayOptions<I, O> {
  definition: WorkflowDefinition<I, O>;
  input: I;
  execution: ExecutionInfo;
  journal: Journal;
  logger: WorkflowLogger;
  /**
   * Live events of the run (an LLM step's text deltas, tool calls). The worker batches them onto
   * the run's topic; the runtime stays free of the engine and its database. The returned promise
   * (settled once the event is written) is handed back to the step, which may await it.
   */
  publish?: (event: {
    eventType: string;
    data: Record<string, unknown>;
    now?: boolean;
  }) => void | Promise<void>;
  /** Each step this replay executed (replayed ones are not reported again): the worker traces them. */
  onStepFinished?: (record: StepRecord) => void;
  /**
   * Hold a completed step's write back until the next durable point, when no other step is
   * running: it is stored before the next step's function runs, before the run blocks or fails, on
   * the next turn of the event loop at the latest, or with the completion (the outcome's
   * `lastStep`: the host stores it in the same round trip). Nothing but the workflow's own code runs
   * meanwhile, so a crash costs what a crash just before the write would: the step runs again. Only
   * for a journal that knows the result limit (an oversized result must fail before the workflow
   * goes on).
   */
  holdLastWrite?: boolean;
}

/**
 * Never settles: the branch of the workflow that awaits it is parked until a later replay. A fresh
 * promise each time: awaiting one shared promise would keep every parked branch's closures
 * reachable from it for the life of the worker process.
 */
const parked = () => new Promise<never>(() => {});

/**
 * Runs a workflow function from the top against its journal. Completed steps return their stored
 * result without running; new steps run and are stored before the function moves on. When every
 * branch still running is parked on a wait (sleep, event, suspend, child), the run is blocked: the
 * outcome lists the waits for the engine to persist, and a later replay continues from there.
 */
export async function replay<I, O>(options: ReplayOptions<I, O>): Promise<ReplayOutcome> {
  return new Replay(options).run();
}

class Replay<I, O> {
  private readonly usedKeys = new Set<string>();
  private readonly waits: NewWait[] = [];
  private nextSeq: number;
  private inFlight = 0;
  private idleCheckScheduled = false;
  private abortReason: string | null = null;
  private infrastructureError: unknown;
  private onBlocked: (() => void) | null = null;
  private onHalted: (() => void) | null = null;
  private idleWaiters: (() => void)[] = [];
  private eventCursor: Promise<bigint> | undefined;
  private storedStepsToReplay: number;
  /** A completed step whose write is held back (holdLastWrite), and the write once it started. */
  private held: NewStepResult | null = null;
  private heldWrite: Promise<void> | undefined;
  private superseded: string | null = null;
  /** The store refused a held-back result as too large, after the workflow went on: the run fails. */
  private heldRefused: unknown;

  constructor(private readonly o: ReplayOptions<I, O>) {
    const seqs = [...o.journal.steps.values(), ...o.journal.waits.values()].map((s) => s.seq);
    this.nextSeq = seqs.length ? Math.max(...seqs) + 1 : 1;
    this.storedStepsToReplay = o.journal.steps.size;
  }

  async run(): Promise<ReplayOutcome> {
    const blocked = new Promise<"blocked">((resolve) => {
      this.onBlocked = () => resolve("blocked");
    });
    // A halted replay ends now, even if the workflow caught the abort and went on: its new steps
    // park instead of running (see runStep), so nothing would ever settle it otherwise.
    const halted = new Promise<"halted">((resolve) => {
      this.onHalted = () => resolve("halted");
    });
    const finished = (async () => {
      try {
        const ctx = this.context();
        return { ok: true as const, value: await this.o.definition.handler(ctx, this.o.input) };
      } catch (err) {
        return { ok: false as const, err };
      }
    })();
    const first = await Promise.race([finished, blocked, halted]);
    // A failure (say, one branch of a Promise.all) is reported once the sibling steps still running
    // have settled and stored their results: a run-level retry must not start them a second time
    // while the first call is still going.
    if (typeof first === "object" && !first.ok) await this.whenNoStepRuns();
    // A held-back step goes with the completion; any other ending stores it first. A write the
    // event loop already started lands before anything is decided.
    const completing = typeof first === "object" && first.ok && !this.halted();
    const lastStep = completing ? this.takeHeld() : undefined;
    if (!completing) await this.writeHeld();
    await this.heldWrite;

    if (this.infrastructureError !== undefined) throw this.infrastructureError;
    if (this.superseded !== null) return { type: "superseded", reason: this.superseded };
    if (this.abortReason !== null) return { type: "aborted", reason: this.abortReason };
    if (this.heldRefused !== undefined) {
      // It cannot get smaller by running again.
      return {
        type: "failed",
        error: serializeError(this.heldRefused, stepKeyOf(this.heldRefused)),
        retryable: false,
      };
    }
    if (first === "blocked") return { type: "blocked", waits: this.waits };
    if (first === "halted") throw new Error("unreachable: a halt sets an abort reason or an error");
    if (first.ok) return this.completed(first.value, lastStep);
    if (first.err instanceof ExecutionAbortedError) return { type: "aborted", reason: first.err.message };
    const error = serializeError(first.err, stepKeyOf(first.err));
    // Whether the run has attempts left is the engine's call (see failExecution); this says only
    // whether another attempt could help.
    const retryable = !(first.err instanceof NonRetryableError) && !isMisuse(first.err);
    return { type: "failed", error, retryable };
  }

  /** The run's result, unless it is over the result limit: then the run fails, for good. */
  private async completed(value: unknown, lastStep: NewStepResult | undefined): Promise<ReplayOutcome> {
    const { json, bytes } = sizedJson(value);
    const limit = this.o.journal.maxResultBytes;
    if (limit !== undefined && bytes > limit) {
      // The run fails for good, but the step it held back did run: it is stored first.
      if (lastStep) {
        this.held = lastStep;
        await this.writeHeld();
        if (this.infrastructureError !== undefined) throw this.infrastructureError;
        if (this.superseded !== null) return { type: "superseded", reason: this.superseded };
        if (this.abortReason !== null) return { type: "aborted", reason: this.abortReason };
      }
      const err = workflowResultTooLarge(this.o.execution.workflowId, bytes, limit);
      return { type: "failed", error: serializeError(err), retryable: false };
    }
    return { type: "completed", result: JSON.parse(json), ...(lastStep ? { lastStep } : {}) };
  }

  private context(): WorkflowContext<I> {
    const step: StepApi = {
      run: <T>(key: string, fn: () => T | Promise<T>, opts?: StepRunOptions) =>
        this.runStep(key, "run", fn, opts) as Promise<Awaited<T>>,
      sleep: (key, duration) => this.sleep(key, parseDuration(duration)),
      sleepUntil: (key, until) => this.sleep(key, new Date(until).getTime() - Date.now(), new Date(until)),
      waitForEvent: (key, opts) =>
        this.wait(key, {
          kind: "event",
          topic: opts.topic,
          match: opts.match,
          wakeAt: opts.timeout === undefined ? null : new Date(Date.now() + parseDuration(opts.timeout)),
        }),
      suspend: (key, opts = {}) =>
        this.wait(key, {
          kind: "suspend",
          payload: opts.data ?? null,
          wakeAt: opts.timeout === undefined ? null : new Date(Date.now() + parseDuration(opts.timeout)),
        }),
      invoke: (key, workflow, input) =>
        this.wait(key, {
          kind: "invoke",
          wakeAt: null,
          child: { workflowId: workflow.id, input: toJson(input), queueName: workflow.options.queue },
        }),
      now: async (key) =>
        new Date((await this.runStep(key, "now", () => new Date().toISOString())) as string),
      uuid: (key) => this.runStep(key, "uuid", () => randomUUID()),
      llm: (key, call, opts) =>
        this.runStep(key, "llm", () => call(this.streamOf(key)), opts, llmTrace(opts?.input)),
      tool: async (key, tool, input, opts) => {
        const outcome = await runToolStep(this.toolHooks(), key, tool, input, opts);
        if (outcome.ok) return outcome.output;
        throw outcome.thrown;
      },
      toolOutcome: async (key, tool, input, opts) => {
        const { thrown: _, ...outcome } = await runToolStep(this.toolHooks(), key, tool, input, opts, true);
        return outcome;
      },
      // A child run, not inline steps: the agent keeps its own journal (its step keys cannot clash
      // with the parent's), its own approvals, stream topic and trace subtree, and any worker
      // serving its queue runs it.
      agent: (key, agent, input) =>
        this.wait(key, {
          kind: "invoke",
          wakeAt: null,
          child: { workflowId: agent.id, input: toJson(input), queueName: agent.options.queue },
        }),
    };
    const replaying = () => this.storedStepsToReplay > 0;
    const tag = { execution_id: this.o.execution.id, attempt: this.o.execution.attempt };
    const log: WorkflowLogger = {
      info: (m, f) => !replaying() && this.o.logger.info(m, { ...tag, ...f }),
      warn: (m, f) => !replaying() && this.o.logger.warn(m, { ...tag, ...f }),
      error: (m, f) => !replaying() && this.o.logger.error(m, { ...tag, ...f }),
    };
    return { input: this.o.input, execution: this.o.execution, step, log };
  }

  /** Marks a key used in this run; a second use is a bug in the workflow, not a cache hit. */
  private claimKey(key: string): void {
    if (typeof key !== "string" || key.length === 0 || key.length > 500) {
      throw new StepMisuseError(
        `step keys must be non-empty strings of at most 500 characters, got ${JSON.stringify(key)}`,
      );
    }
    if (this.usedKeys.has(key)) {
      throw new StepMisuseError(
        `step key '${key}' is used twice in this run; give every step a unique key (in a loop: \`${key}-\${i}\`)`,
      );
    }
    this.usedKeys.add(key);
  }

  /** A stored result, returned (or rethrown) as the step's value. */
  private replayStored(stored: JournalStep): unknown {
    this.storedStepsToReplay--;
    if (stored.status === "completed") return stored.output;
    throw withStepKey(rebuildError(stored), stored.stepKey);
  }

  private streamOf(stepKey: string) {
    return {
      publish: (eventType: string, data: Record<string, unknown>, options?: { now?: boolean }) =>
        this.o.publish?.({ eventType, data: { step_key: stepKey, ...data }, now: options?.now }),
    };
  }

  private toolHooks() {
    return {
      execution: this.o.execution,
      runStep: <T>(key: string, fn: () => Promise<T>, opts: StepRunOptions, trace: StepTrace) =>
        this.runStep(key, "tool", fn, opts, trace) as Promise<T>,
      suspend: <T>(key: string, data: unknown) =>
        this.wait<T>(key, { kind: "suspend", payload: data, wakeAt: null }),
    };
  }

  private async runStep<T>(
    key: string,
    kind: StepKind,
    fn: () => T | Promise<T>,
    opts: StepRunOptions = {},
    trace: StepTrace = {},
  ) {
    this.claimKey(key);
    const stored = this.o.journal.steps.get(key);
    // A stored failure replays as that failure (the workflow may have caught it and gone on); a
    // run-level retry clears failed results, so the next attempt runs those steps again.
    if (stored) return this.replayStored(stored) as Awaited<T>;
    // The step before it is stored before this one runs.
    await this.writeHeld();
    // The run is no longer this replay's (or its database is gone): start nothing new.
    if (this.halted()) return parked();
    const seq = this.nextSeq++;
    const retries = opts.retries ?? DEFAULT_STEP_RETRIES;
    this.inFlight++;
    try {
      for (let attempt = 1; ; attempt++) {
        const startedAt = new Date();
        let value: Awaited<T>;
        try {
          value = await fn();
        } catch (err) {
          // Only the step's own failures count towards its retries (see save()).
          if (err instanceof ExecutionAbortedError || this.halted()) throw err;
          if (err instanceof NonRetryableError || attempt > retries) {
            return await this.failStep({ stepKey: key, seq, kind, attempts: attempt, startedAt }, trace, err);
          }
          await delay(backoffDelay(attempt, opts.backoff, err));
          if (this.halted()) return parked();
          continue;
        }
        const step = { stepKey: key, seq, kind, attempts: attempt, startedAt };
        // An oversized result is not stored, or sent anywhere: the step fails in its place.
        const { json, bytes } = sizedJson(value);
        const limit = this.o.journal.maxResultBytes;
        if (limit !== undefined && bytes > limit) {
          return await this.failStep(step, trace, stepResultTooLarge(key, bytes, limit));
        }
        const output: unknown = JSON.parse(json);
        if (this.o.holdLastWrite && this.inFlight === 1 && this.held === null) {
          this.hold({ ...step, status: "completed", output });
          this.report(key, kind, startedAt, attempt, trace, { status: "completed", output });
          return output as Awaited<T>;
        }
        let saved: JournalStep;
        try {
          saved = await this.save({ ...step, status: "completed", output });
        } catch (err) {
          // The store refused it as too large: how a remote worker, whose journal does not know the
          // limit, learns of it (Spool's 413).
          if (err instanceof StepResultTooLargeError) return await this.failStep(step, trace, err);
          throw err;
        }
        this.report(key, kind, startedAt, attempt, trace, { status: "completed", output: saved.output });
        return saved.output as Awaited<T>;
      }
    } finally {
      this.settled();
    }
  }

  /** Stores a step's failure, reports it, and throws it to the workflow (tagged with its key). */
  private async failStep(
    step: Pick<NewStepResult, "stepKey" | "seq" | "kind" | "attempts" | "startedAt">,
    trace: StepTrace,
    err: unknown,
  ): Promise<never> {
    const error = serializeError(err);
    await this.save({ ...step, status: "failed", error });
    this.report(step.stepKey, step.kind, step.startedAt, step.attempts, trace, { status: "failed", error });
    throw withStepKey(err, step.stepKey);
  }

  /** A step (or a read the run must not block during) is no longer running. */
  private settled(): void {
    // Waits reached from now on are reached later than the cursor read so far: they read their own.
    this.eventCursor = undefined;
    this.inFlight--;
    if (this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    this.scheduleIdleCheck();
  }

  /** Tells the worker a step ran; a failing observer must not fail the workflow. */
  private report(
    stepKey: string,
    kind: StepKind,
    startedAt: Date,
    attempts: number,
    trace: StepTrace,
    result: Pick<StepRecord, "status" | "output" | "error">,
  ): void {
    if (!this.o.onStepFinished) return;
    try {
      const described = result.status === "completed" ? trace.describe?.(result.output) : undefined;
      this.o.onStepFinished({
        stepKey,
        kind,
        attempts,
        startedAt,
        endedAt: new Date(),
        input: trace.input,
        ...result,
        error: result.error ?? described?.error,
        attributes: described?.attributes,
      });
    } catch (err) {
      this.o.logger.warn("step observer failed", { step_key: stepKey, error: String(err) });
    }
  }

  /**
   * Stores a step result. A failed write (database unreachable, lost commit reply) is not the step
   * failing: retrying the step would run its function (an LLM call, a payment) again. It halts the
   * replay instead and replay() throws, so the job is retried and the next replay adopts whatever
   * was stored.
   */
  private async save(step: Parameters<Journal["saveStep"]>[0]): Promise<JournalStep> {
    try {
      return await this.o.journal.saveStep(step);
    } catch (err) {
      // Not the store failing: it refused this result (runStep fails the step instead).
      if (err instanceof StepResultTooLargeError && step.status === "completed") throw err;
      if (err instanceof ExecutionAbortedError) this.abortReason ??= err.message;
      else this.infrastructureError ??= err;
      this.onHalted?.();
      throw err;
    }
  }

  private halted(): boolean {
    return (
      this.abortReason !== null ||
      this.infrastructureError !== undefined ||
      this.superseded !== null ||
      this.heldRefused !== undefined
    );
  }

  /** Holds a completed step's write back (holdLastWrite); the event loop's next turn stores it at the latest. */
  private hold(step: NewStepResult): void {
    this.held = step;
    setImmediate(() => void this.writeHeld());
  }

  /** The held-back step, now the caller's to store (with the completion). */
  private takeHeld(): NewStepResult | undefined {
    const step = this.held ?? undefined;
    this.held = null;
    return step;
  }

  /**
   * Stores the held-back step, if any, and resolves once that write (or one already started)
   * landed. Counts as a running step meanwhile, so the run cannot look blocked before it lands. A
   * failed write halts the replay as any failed save does; a stored result that is not the one the
   * workflow went on with supersedes this replay. A result the store refuses as too large (a remote
   * worker's, when Spool's limits are tighter than it was told) can no longer fail the step in the
   * workflow, which went on: the step is stored as failed and the run fails with it.
   */
  private writeHeld(): Promise<void> {
    const step = this.takeHeld();
    if (step) {
      this.inFlight++;
      this.heldWrite = this.save(step)
        .then(
          (stored) => {
            if (storedAsWritten(stored, step)) return;
            this.superseded ??= new StepSupersededError(step.stepKey).message;
            this.onHalted?.();
          },
          async (err) => {
            if (!(err instanceof StepResultTooLargeError)) return; // save() halted the replay with it
            const refused = withStepKey(err, step.stepKey);
            this.heldRefused ??= refused;
            this.onHalted?.();
            await this.save({
              ...step,
              status: "failed",
              output: undefined,
              error: serializeError(err),
            }).catch(
              () => {}, // halted by save()
            );
          },
        )
        .finally(() => this.settled());
    }
    return this.heldWrite ?? Promise.resolve();
  }

  private whenNoStepRuns(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async sleep(key: string, ms: number, until?: Date): Promise<void> {
    const open = this.o.journal.waits.has(key) || this.o.journal.steps.has(key);
    if (!open && ms < IN_PROCESS_SLEEP_MS) {
      await this.runStep(key, "sleep", () => delay(Math.max(0, ms)).then(() => null));
      return;
    }
    await this.wait(key, { kind: "sleep", wakeAt: until ?? new Date(Date.now() + Math.max(0, ms)) });
  }

  /**
   * A step answered from outside the process (timer, event, resume, child run). Resolved: its
   * stored result. Otherwise the branch parks and the wait is reported when the run blocks.
   */
  private async wait<T>(key: string, wait: Omit<NewWait, "stepKey" | "seq">): Promise<T> {
    this.claimKey(key);
    const stored = this.o.journal.steps.get(key);
    if (stored) return this.replayStored(stored) as T;
    const open = this.o.journal.waits.get(key);
    const seq = open?.seq ?? this.nextSeq++;
    // A new event wait notes where the project's events stand now: one published before the run
    // parks answers it too. (An open wait was matched at every publish since it was stored.)
    const afterSequence = wait.kind === "event" && !open ? await this.eventCursorOrHalt() : undefined;
    if (afterSequence === null) return parked();
    // An open wait keeps its original deadline and seq; it is re-reported so the run parks on it.
    this.waits.push({ ...wait, stepKey: key, seq, wakeAt: open ? open.wakeAt : wait.wakeAt, afterSequence });
    this.scheduleIdleCheck();
    return parked();
  }

  /**
   * The project's event sequence, for a wait reached now. Waits reached together (say, in one
   * Promise.all) share one read; once anything settles, the next wait reads again. Counts as a
   * running step meanwhile, so the run cannot block before the wait is reported; null when the read
   * failed (halted).
   */
  private async eventCursorOrHalt(): Promise<bigint | null> {
    this.inFlight++;
    try {
      this.eventCursor ??= this.o.journal.eventCursor();
      return await this.eventCursor;
    } catch (err) {
      this.infrastructureError ??= err;
      this.onHalted?.();
      return null;
    } finally {
      this.settled();
    }
  }

  /**
   * Blocked = no step is executing and at least one branch is parked. Checked two macrotask turns
   * after the last step settles, so the workflow's own continuations run first.
   */
  private scheduleIdleCheck(): void {
    if (this.idleCheckScheduled) return;
    this.idleCheckScheduled = true;
    setImmediate(() =>
      setImmediate(() => {
        this.idleCheckScheduled = false;
        if (this.inFlight === 0 && this.waits.length > 0) this.onBlocked?.();
      }),
    );
  }
}

/** Results are stored as JSON; returning the round-tripped value keeps first runs and replays identical. */
function toJson(value: unknown): unknown {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value));
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
