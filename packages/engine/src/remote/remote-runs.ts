import { setTimeout as sleep } from "node:timers/promises";
import type { Execution, StepResult, Wait, Worker } from "@spool/db";
import {
  badRequest,
  conflict,
  FIRST_START_CLAIM,
  isUuid,
  notFound,
  type SerializedError,
  SpoolError,
} from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import { type Claim, claimOf } from "../execution/claim.js";
import type { Executions } from "../execution/executions.js";
import { eventCursorOf, storeStep } from "../execution/journal-store.js";
import { nextSeq } from "../execution/next-seq.js";
import { PushedRuns } from "../push/pushed-runs.js";
import {
  ExecutionAbortedError,
  type NewStepResult,
  type NewWait,
  type StepKind,
  type StepRecord,
  StepSupersededError,
} from "../runtime/journal.js";
import {
  isResultTooLarge,
  maxResultBytes,
  type ResultTooLargeError,
  sizedJson,
  stepResultTooLarge,
  workflowResultTooLarge,
} from "../runtime/result-size.js";
import { executionFields, STEP_RESULT_FIELDS } from "../sql/rows.js";
import { type ProtocolWait, toNewWait } from "./protocol-waits.js";

/** Who calls a worker route: the push worker it says it is, and (Spool's SDK) the push's claim. */
export interface RemoteCaller {
  workerId?: string | null;
  claim?: Claim | null;
}

/** A step result as a worker sends it (`POST …/steps`, `last_step` of `…/complete`); the rest defaults. */
export interface StepWrite {
  stepKey: string;
  output: unknown;
  status: "completed" | "failed";
  error: SerializedError | null;
  seq?: number;
  kind?: StepKind;
  attempts?: number;
  startedAt?: Date;
}

/** The push worker a run is held by, as the worker routes check it. */
type Holder = Pick<Worker, "id" | "mode" | "projectId" | "pushEndpointUrl">;

// Purpose: a project's execution and the worker holding it, in one round trip (every worker call
// starts with it). Params: execution, project. Locks: none. Result: the run with its holder as JSON.
const IDENTIFY = `
  SELECT ${executionFields("e")},
    (SELECT json_build_object('id', w.id, 'mode', w.mode, 'projectId', w.project_id,
              'pushEndpointUrl', w.push_endpoint_url)
       FROM workers w WHERE w.id = e.worker_id) AS holder
  FROM executions e WHERE e.id = $1 AND e.project_id = $2`;
const REMOTE_STEPS = `SELECT ${STEP_RESULT_FIELDS} FROM step_results WHERE execution_id = $1 ORDER BY seq`;
const REMOTE_WAITS = `SELECT step_key AS "stepKey", seq, kind, wake_at AS "wakeAt" FROM waits
  WHERE execution_id = $1 AND status = 'pending'`;

/**
 * Runs a process remembers from identifying them for their push worker: with several API replicas
 * most of a run's calls reach one that did not push it, and only the first of them (in this time)
 * reads it. The time bounds how long a run that moved on elsewhere (released, handed back, taken
 * by another worker) is taken for the caller's without a read: a verb's statement still checks the
 * claim, but a completed step result is stored before that check refuses the caller.
 */
const IDENTIFIED_RUNS = { max: 1000, ttlMs: 5000 };

/**
 * The waits between reads of a run that is not in Postgres when a worker calls for it under a first
 * start's claim: another API replica may have pushed it before its insert committed
 * (push-dispatcher.ts; only to workers whose calls carry the claim), which is usually a millisecond
 * or two away. After them the call is answered not found, as for any unknown run, and the worker
 * makes it again for as long as its client retries (runner/http-host.ts): how long an insert takes
 * (a lock, a failover) is not this replica's to bound.
 */
const PUSHED_BEFORE_INSERT_WAITS_MS = [1, 2, 4, 8, 16, 32, 64];
const mayBePushedBeforeInsert = (caller: RemoteCaller) =>
  caller.claim?.dispatchSeq === FIRST_START_CLAIM.dispatchSeq &&
  caller.claim.lease === FIRST_START_CLAIM.lease;

/** A claim no run holds: a write under it stores a completed result and is then refused. */
const FENCED: Claim = { dispatchSeq: -1, lease: -1 };

/** The run a worker route acts on and the claim its caller holds (null: none, the run is not its). */
interface Identity {
  execution: Execution;
  claim: Claim | null;
}

/**
 * A verb acting on a run as this process pushed it found the run moved on since (its claim refused):
 * the verb is done again from the run as stored, whose answer (a refusal, or the verb's repeat) is
 * the caller's.
 */
class MovedOn extends Error {}

const notYours = (e: Execution) =>
  conflict(`execution is ${e.status} and no longer this worker's to run`, { status: e.status });

/**
 * 413, as a body over the API's limit: a worker cannot make the result smaller by sending it again.
 * `details.error_name` lets Spool's SDK fail the step (or run) with the same error an in-cluster
 * worker's would.
 */
const tooLarge = (err: ResultTooLargeError, stepKey?: string) =>
  new SpoolError("PAYLOAD_TOO_LARGE", err.message, {
    error_name: err.name,
    ...(stepKey === undefined ? {} : { step_key: stepKey }),
    ...(err.sizes ? { bytes: err.sizes.bytes, max_bytes: err.sizes.maxBytes } : {}),
  });

/**
 * The engine's side of the worker protocol's /internal routes: every call is one of the verbs an
 * in-cluster worker uses (journal, step, park, complete, fail, hand back), under the claim of the
 * start that pushed the run to the caller. Only runs of the caller's project are touched, and only
 * while no in-cluster worker holds them; a worker calling for a run it no longer holds gets 409 and
 * changes nothing (a completed step result is still kept: the next worker adopts it).
 */
export class RemoteRuns {
  /** Runs identified here for a caller proving their exact claim (see asCaller). */
  private readonly identified = new PushedRuns(IDENTIFIED_RUNS);

  constructor(
    private readonly deps: EngineDeps,
    private readonly executions: Executions,
    private readonly pushed: PushedRuns,
  ) {}

  /** Stored steps (settled waits included) and the waits still open, in the order reached. */
  async journal(projectId: string, executionId: string, caller: RemoteCaller) {
    const { execution, claim } = await this.identify(projectId, executionId, caller);
    if (!claim) throw notYours(execution);
    const [steps, waits] = await Promise.all([
      this.deps.pool.query<StepResult>({
        name: "spool_remote_steps",
        text: REMOTE_STEPS,
        values: [executionId],
      }),
      this.deps.pool.query<Pick<Wait, "stepKey" | "seq" | "kind" | "wakeAt">>({
        name: "spool_remote_waits",
        text: REMOTE_WAITS,
        values: [executionId],
      }),
    ]);
    return { steps: steps.rows, waits: waits.rows };
  }

  async step(projectId: string, executionId: string, caller: RemoteCaller, stepKey: string) {
    const { execution, claim } = await this.identify(projectId, executionId, caller);
    if (!claim) throw notYours(execution);
    const step = await this.deps.prisma.stepResult.findUnique({
      where: { executionId_stepKey: { executionId, stepKey } },
    });
    if (!step) throw notFound("step", stepKey);
    return step;
  }

  /** Stores a step result: a completed one is never overwritten, and is kept even from a fenced worker. */
  saveStep(projectId: string, executionId: string, caller: RemoteCaller, step: StepWrite) {
    return this.asCaller(projectId, executionId, caller, async ({ execution, claim }, refuse) => {
      const write = await this.newStep(executionId, step);
      try {
        const stored = await storeStep(this.deps.pool, executionId, claim ?? FENCED, write);
        this.deps.metrics.stepFinished(stored.kind, Date.now() - write.startedAt.getTime());
        return stored;
      } catch (err) {
        if (err instanceof ExecutionAbortedError) throw refuse(execution);
        // Refused before any write: nothing of the step is stored.
        if (isResultTooLarge(err)) throw tooLarge(err, step.stepKey);
        throw err;
      }
    });
  }

  /** Parks the run on its waits: the protocol's one wait, or (Spool's SDK) all a replay parked on. */
  park(projectId: string, executionId: string, caller: RemoteCaller, wait: ProtocolWait | NewWait[]) {
    return this.asCaller(
      projectId,
      executionId,
      caller,
      async ({ execution, claim }, refuse) => {
        const keys = Array.isArray(wait) ? wait.map((w) => w.stepKey) : [wait.stepKey];
        if (!claim) {
          // The same call made again after its answer was lost: the run is parked on these steps already.
          if (await this.parkedOn(execution, keys)) return execution;
          throw refuse(execution);
        }
        const waits = Array.isArray(wait) ? wait : [await toNewWait(this.deps, execution, wait)];
        const parked = await this.executions.block({ executionId, claim, waits });
        if (!parked) throw refuse(execution);
        return parked;
      },
      { endsTurn: true },
    );
  }

  /**
   * Completes the run; `steps` are the spans of steps the worker ran and has not reported yet,
   * `spansStored` the keys of steps it ran whose spans it reported before, and `lastStep` the run's
   * last step result when the worker held it back (stored first, first write wins; a 409 with
   * `details.reason` "step_superseded" when another worker's result won).
   */
  complete(
    projectId: string,
    executionId: string,
    caller: RemoteCaller,
    result: unknown,
    steps: StepRecord[] = [],
    lastStep?: StepWrite,
    spansStored: string[] = [],
  ) {
    return this.asCaller(
      projectId,
      executionId,
      caller,
      (who, refuse) => this.completeAs(who, refuse, result, steps, lastStep, spansStored),
      { endsTurn: true },
    );
  }

  private async completeAs(
    { execution, claim }: Identity,
    refuse: (e: Execution) => Error,
    result: unknown,
    steps: StepRecord[],
    lastStep: StepWrite | undefined,
    spansStored: string[],
  ) {
    const executionId = execution.id;
    // As a step's: an oversized result is refused and nothing is stored (the worker fails the run).
    const { bytes } = sizedJson(result);
    if (bytes > maxResultBytes()) {
      throw tooLarge(workflowResultTooLarge(execution.workflowId, bytes, maxResultBytes()));
    }
    // A completed step: an error sent with it is not stored (as the one-statement path does not).
    const held = lastStep ? await this.newStep(executionId, { ...lastStep, error: null }) : undefined;
    if (held) {
      const size = sizedJson(held.output).bytes;
      if (size > maxResultBytes()) {
        throw tooLarge(stepResultTooLarge(held.stepKey, size, maxResultBytes()), held.stepKey);
      }
    }
    // The one-statement completion when the worker's spans, sent now or before, cover every stored
    // step (the statement checks).
    const ran = [...new Set([...spansStored, ...steps.map((r) => r.stepKey)])];
    const fresh = claim ? { started: execution, steps, ran } : undefined;
    try {
      const done = await this.executions.complete(executionId, claim ?? FENCED, result, {
        fresh,
        lastStep: held,
      });
      if (!done) throw refuse(execution);
      if (held) this.deps.metrics.stepFinished(held.kind, Date.now() - held.startedAt.getTime());
      return done;
    } catch (err) {
      if (err instanceof ExecutionAbortedError) throw refuse(execution);
      if (err instanceof StepSupersededError) {
        throw conflict(err.message, { reason: "step_superseded", step_key: held?.stepKey });
      }
      throw err;
    }
  }

  /** A step result as a worker route took it, with the protocol's defaults filled in. */
  private async newStep(executionId: string, step: StepWrite): Promise<NewStepResult> {
    return {
      stepKey: step.stepKey,
      seq: step.seq ?? (await nextSeq(this.deps.prisma, executionId)),
      kind: step.kind ?? "run",
      status: step.status,
      output: step.output,
      error: step.error ?? undefined,
      attempts: step.attempts ?? 1,
      startedAt: step.startedAt ?? new Date(),
    };
  }

  /** A failed attempt: the engine retries it while `retryable` and attempts are left. */
  fail(
    projectId: string,
    executionId: string,
    caller: RemoteCaller,
    args: { error: SerializedError; retryable: boolean; maxRetries: number },
  ) {
    return this.asCaller(
      projectId,
      executionId,
      caller,
      async ({ execution, claim }, refuse) => {
        const failed = await this.executions.fail({
          executionId,
          claim: claim ?? FENCED,
          error: args.error,
          retry: { retryable: args.retryable, maxRetries: args.maxRetries },
        });
        if (!failed) throw refuse(execution);
        return failed;
      },
      { endsTurn: true },
    );
  }

  /**
   * The worker stopped the run. Cancelled: acknowledged. Nobody cancelled it (the worker is
   * shutting down): a hand-back, the run goes back to its queue for another worker.
   */
  async confirmCancellation(projectId: string, executionId: string, caller: RemoteCaller) {
    this.identified.forget(executionId);
    const { execution, claim } = await this.identify(projectId, executionId, caller);
    // Not running any more (cancelled, timed out, or handed back by this same call made again):
    // there is nothing to stop or give back.
    if (execution.status !== "running") return execution;
    const released = claim ? await this.executions.release(executionId, claim) : null;
    if (!released) throw notYours(execution);
    return released;
  }

  /** The worker does not have the run's workflow. */
  async notLoaded(projectId: string, executionId: string, caller: RemoteCaller) {
    this.identified.forget(executionId);
    const { execution, claim } = await this.identify(projectId, executionId, caller);
    if (!claim) throw notYours(execution);
    const outcome = await this.executions.notLoaded(execution, claim, caller.workerId ?? execution.workerId);
    if (outcome === "not_ours") throw notYours(execution);
    return outcome;
  }

  /** Where the project's events stand: a new event wait is answered by events after this. */
  async eventCursor(projectId: string, executionId: string, caller: RemoteCaller): Promise<bigint> {
    const { execution, claim } = await this.identify(projectId, executionId, caller);
    if (!claim) throw notYours(execution);
    return eventCursorOf(this.deps.pool, executionId);
  }

  /** Spans of steps the worker ran, written exactly as an in-cluster worker's are. */
  async recordStepSpans(projectId: string, executionId: string, caller: RemoteCaller, records: StepRecord[]) {
    // Read every time: the span write itself checks no claim.
    const { execution, claim } = await this.identifyAndRemember(projectId, executionId, caller);
    if (!claim) throw notYours(execution);
    await this.deps.traces.recordSteps(execution, records);
  }

  /**
   * The span the worker last reported for the run; the next push echoes it. The SDKs send it as the
   * run parks, without naming themselves: metadata only, any key of the project may set it.
   */
  async setOtelSpanId(projectId: string, executionId: string, otelSpanId: string | null) {
    const found = isUuid(executionId)
      ? await this.deps.prisma.execution.updateMany({
          where: { id: executionId, projectId },
          data: { otelSpanId },
        })
      : { count: 0 };
    if (found.count === 0) throw notFound("execution", executionId);
  }

  /** Whether the run is parked (waiting or suspended) on a wait for each of these steps. */
  private async parkedOn(execution: Execution, stepKeys: string[]): Promise<boolean> {
    if (execution.status !== "waiting" && execution.status !== "suspended") return false;
    const found = await this.deps.prisma.wait.count({
      where: { executionId: execution.id, stepKey: { in: stepKeys } },
    });
    return found === new Set(stepKeys).size;
  }

  /**
   * A write verb as the caller: when it proves the exact claim of a run this process pushed to it,
   * or identified for it before, first from that run as known, without reading it (the verb's own
   * statement checks the claim); then, or when that found the run moved on (`refuse`), from the run
   * as stored. Each verb is safe to repeat after such a refusal: a step result it stored is found
   * again, first write wins.
   */
  private async asCaller<T>(
    projectId: string,
    executionId: string,
    caller: RemoteCaller,
    act: (who: Identity, refuse: (e: Execution) => Error) => Promise<T>,
    o: { endsTurn?: boolean } = {},
  ): Promise<T> {
    // A run this process pushed before its insert is acted on once it is in.
    await this.pushed.insertOf(executionId);
    const started = this.knownStart(projectId, executionId, caller);
    if (started) {
      try {
        const done = await act({ execution: started, claim: claimOf(started) }, () => new MovedOn());
        // The run's turn on its worker is over: its next start has a claim of its own.
        if (o.endsTurn) this.identified.remove(started);
        return done;
      } catch (err) {
        if (!(err instanceof MovedOn)) throw err;
        this.identified.remove(started);
      }
    }
    const who = await this.identifyAndRemember(projectId, executionId, caller);
    const done = await act(who, notYours);
    if (o.endsTurn) this.identified.remove(who.execution);
    return done;
  }

  /** The run as this process knows it under the caller's exact claim, pushed from here or identified. */
  private knownStart(projectId: string, executionId: string, caller: RemoteCaller): Execution | undefined {
    if (!caller.claim) return undefined;
    return (
      this.pushed.find(projectId, executionId, caller.claim) ??
      this.identified.find(projectId, executionId, caller.claim)
    );
  }

  /**
   * identify(), remembering a run the caller proved its exact claim on: one start's claim names one
   * holder, checked here once, so the caller's later calls under it need no read.
   */
  private async identifyAndRemember(projectId: string, executionId: string, caller: RemoteCaller) {
    const who = await this.identify(projectId, executionId, caller);
    if (who.claim && caller.claim) this.identified.add(who.execution);
    return who;
  }

  /**
   * The run and the claim the caller holds on it: null when the run is no longer the caller's.
   * Runs an in-cluster worker holds are off limits, and a caller must say which worker it is. A
   * caller naming the worker the run was pushed to (or a worker registered since at the same push
   * URL, after a re-registration) holds the run's current claim; Spool's SDK proves its exact claim.
   */
  private async identify(projectId: string, executionId: string, caller: RemoteCaller): Promise<Identity> {
    if (!isUuid(executionId)) throw notFound("execution", executionId);
    await this.pushed.insertOf(executionId);
    const read = async () =>
      (
        await this.deps.pool.query<Execution & { holder: Holder | null }>({
          name: "spool_remote_identify",
          text: IDENTIFY,
          values: [executionId, projectId],
        })
      ).rows[0];
    let row = await read();
    if (!row && mayBePushedBeforeInsert(caller)) {
      for (const ms of PUSHED_BEFORE_INSERT_WAITS_MS) {
        await sleep(ms);
        row = await read();
        if (row) break;
      }
    }
    if (!row) throw notFound("execution", executionId);
    const { holder, ...execution } = row;
    const running = execution.status === "running";
    if (running && holder?.mode === "queue") {
      throw conflict("this run is held by an in-cluster worker, not by a push worker");
    }
    if (!caller.claim && !caller.workerId) {
      throw badRequest("name the worker: the worker protocol's calls carry X-Worker-ID (or worker_id)");
    }
    const pushed = running && holder?.mode === "push" && holder.projectId === projectId;
    let claim: Claim | null = null;
    if (caller.claim) {
      const current = claimOf(execution);
      const exact = caller.claim.dispatchSeq === current.dispatchSeq && caller.claim.lease === current.lease;
      claim = pushed && exact ? current : null;
    } else if (pushed && caller.workerId && (await this.isHolder(holder!, caller.workerId))) {
      claim = claimOf(execution);
    }
    return { execution, claim };
  }

  private async isHolder(holder: Holder, workerId: string): Promise<boolean> {
    if (holder.id === workerId) return true;
    if (!isUuid(workerId) || !holder.pushEndpointUrl) return false;
    const sibling = await this.deps.prisma.worker.count({
      where: { id: workerId, projectId: holder.projectId, pushEndpointUrl: holder.pushEndpointUrl },
    });
    return sibling > 0;
  }
}

export type { StepResult, Wait };
