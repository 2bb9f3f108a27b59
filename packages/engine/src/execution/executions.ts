import { randomUUID } from "node:crypto";
import type { Execution, Prisma } from "@spool/db";
import {
  decodeTimeCursor,
  type ExecutionStatus,
  isSpoolError,
  isUuid,
  isWaitOver,
  notFound,
  timeCursorOf,
  toPage,
  type WaitUntil,
} from "@spool/shared";
import type { EngineDeps } from "../deps.js";
import type { DispatchRequest } from "../dispatch/dispatcher.js";
import type { Events } from "../events/events.js";
import { withIdempotency } from "../idempotency/idempotency.js";
import { EXECUTION_FIELDS } from "../sql/rows.js";
import type { SpanRow } from "../traces/span-rows.js";
import { createdAfterField } from "../util/keyset.js";
import { afterTurn } from "./after-finish.js";
import { blockExecution } from "./block-execution.js";
import { type Blocked, type BlockedReason, blockedFilter, blockedRuns } from "./blocked.js";
import { cancelExecution } from "./cancel-execution.js";
import type { Claim } from "./claim.js";
import { createExecutions, createRootRun, isPlainRootRun, type RunRequest } from "./create-executions.js";
import { type DeferredJob, DeferredStart, type Taking } from "./deferred-start.js";
import { completeExecution, failExecution, releaseExecution } from "./finish-execution.js";
import { fireTimer } from "./fire-timer.js";
import { handBackNotLoaded } from "./hand-back-not-loaded.js";
import { type JournalRows, loadJournal, type StepStore } from "./journal-store.js";
import { listSteps } from "./list-steps.js";
import { resumeExecution } from "./resume-execution.js";
import { startExecution } from "./start-execution.js";
import { startWaitedChildren, waitedChildrenOf } from "./start-waited-children.js";

/** What a run request gets back: the contract's run response. */
export interface RunReceipt {
  execution_id: string;
  workflow_id: string;
  status: "queued";
  queue_name: string;
  created_at: string;
}

/** A `?wait=` long poll: how long, for what, and the client's signal (it may leave). */
export interface WaitOptions {
  waitMs: number;
  until: WaitUntil;
  signal?: AbortSignal;
}

/** A run as the API shows it: its row, what its suspended step shows, and why it waits to start. */
export type ExecutionView = Execution & { suspendedData: unknown; blocked?: Blocked | null };

export interface ListExecutionsFilter {
  /** Only queued runs held back for this reason (see blocked.ts). */
  blocked?: BlockedReason;
  workflowId?: string;
  status?: ExecutionStatus;
  queueName?: string;
  parentExecutionId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
}

const GET_EXECUTION = `SELECT ${EXECUTION_FIELDS} FROM executions WHERE id = $1 AND project_id = $2`;
const GET_EXECUTION_BY_ID = `SELECT ${EXECUTION_FIELDS} FROM executions WHERE id = $1`;

const receipt = (e: Execution): RunReceipt => ({
  execution_id: e.id,
  workflow_id: e.workflowId,
  status: "queued",
  queue_name: e.queueName,
  created_at: e.createdAt.toISOString(),
});

/** Executions: the REST-facing verbs and the worker-facing ones, over one state machine. */
/**
 * Who starts new plain root runs on push workers without a job, in this process: its push
 * dispatcher (push/push-dispatcher.ts), while it runs.
 */
/** A way this process starts a new plain root run on a worker without a BullMQ job. */
export interface RunsStartedWithoutJob {
  /** Whether a new plain root run of this workflow goes that way. */
  serves(projectId: string, workflowId: string): boolean;
  /** Inserts the run and starts it on a worker, or enqueues its job when no worker takes it now. */
  createAndStart(projectId: string, request: RunRequest, id: string): Promise<{ execution: Execution }>;
  /**
   * Sends the run to a worker that inserts it with its first step, for a caller that waits for its
   * finish (in-cluster/direct-runs.ts); null when it cannot go that way (then createAndStart).
   */
  sendNew?(projectId: string, request: RunRequest, id: string): Promise<SentNewRun | null>;
}

/** A new run sent to a worker before its insert. */
export interface SentNewRun {
  /** Resolves once the run is in Postgres (inserted now, for its worker, if that has not done it). */
  inserted(): Promise<void>;
  /** Its finish was seen (so it is in Postgres): no insert of its own is due any more. */
  finished(): void;
}

/** What a wait answers for a run sent before its insert until it is read. */
const NOT_READ = { status: "queued" } as ExecutionView;

export class Executions {
  /**
   * The ways this process starts runs without jobs while they run, tried in order: its push
   * dispatcher (remote workers), then its sender to in-cluster worker processes.
   */
  private readonly withoutJob: RunsStartedWithoutJob[] = [];

  /** New plain root runs may start through `starter` from now on (`first`: tried before the others). */
  addStarterWithoutJob(starter: RunsStartedWithoutJob, o: { first?: boolean } = {}): void {
    if (o.first) this.withoutJob.unshift(starter);
    else this.withoutJob.push(starter);
  }

  removeStarterWithoutJob(starter: RunsStartedWithoutJob): void {
    const i = this.withoutJob.indexOf(starter);
    if (i >= 0) this.withoutJob.splice(i, 1);
  }

  constructor(
    private readonly deps: EngineDeps,
    /** Resuming a remote worker's suspend publishes the event that answers it. */
    private readonly events: Events,
  ) {}

  /**
   * The execution once the wait is over (terminal, or for `until: "blocked"` also parked), or as it
   * stands after `waitMs` (long-poll for `?wait=`). Stops at once when `signal` aborts.
   */
  async waitFor(projectId: string, executionId: string, w: WaitOptions) {
    if (w.waitMs <= 0) return this.get(projectId, executionId);
    // The watcher's first read answers at once for a run already over (or unknown: 404).
    return this.deps.watcher.wait(executionId, () => this.get(projectId, executionId), w.waitMs, {
      done: (e) => isWaitOver(e.status, w.until),
      fromAnnounced: this.announcedView(projectId),
      signal: w.signal,
    });
  }

  /**
   * Starts one run and waits for it as waitFor does (`POST …/run?wait=`). A plain new run is
   * watched from before it exists, so the wait reads nothing until its finish is announced.
   */
  async runAndWait(
    projectId: string,
    request: RunRequest,
    idempotencyKey: string | null | undefined,
    w: WaitOptions,
  ) {
    if (w.waitMs > 0 && !idempotencyKey && isPlainRootRun(request) && !waitedChildrenOf([request], false)) {
      const id = randomUUID();
      const starter = this.starterFor(projectId, request);
      // Set once the run went to a worker before its insert (sendNew).
      const sending: { sent: SentNewRun | null } = { sent: null };
      const read = async () => {
        const { sent } = sending;
        if (!sent) return this.get(projectId, id);
        // In Postgres: its worker inserted it. Not yet: it is once inserted() resolves.
        const found = await this.get(projectId, id).catch((err: unknown) => {
          if (isSpoolError(err) && err.type === "NOT_FOUND") return null;
          throw err;
        });
        if (found) {
          sent.finished();
          return found;
        }
        await sent.inserted();
        return this.get(projectId, id);
      };
      let execution = await this.deps.watcher.wait(id, read, w.waitMs, {
        done: (e) => isWaitOver(e.status, w.until),
        fromAnnounced: this.announcedView(projectId),
        first: async () => {
          sending.sent = (await starter?.sendNew?.(projectId, request, id)) ?? null;
          if (sending.sent) return NOT_READ;
          return { ...(await this.createPlainRun(projectId, request, id, starter)), suspendedData: null };
        },
        signal: w.signal,
      });
      if (execution === NOT_READ) execution = await read();
      // Announced or read: it is in Postgres.
      sending.sent?.finished();
      return { execution, replayed: false };
    }
    const { receipt, replayed } = await this.run(projectId, request, idempotencyKey);
    return { execution: await this.waitFor(projectId, receipt.execution_id, w), replayed };
  }

  /** A finished run's announced row is the committed one; a finished run shows no suspended data. */
  private announcedView(projectId: string) {
    return (row: Execution) => (row.projectId === projectId ? { ...row, suspendedData: null } : undefined);
  }

  /** Starts one run. A repeated Idempotency-Key returns the first receipt and creates nothing. */
  async run(projectId: string, request: RunRequest, idempotencyKey?: string | null) {
    // The hot path: a plain root run is one statement, then its job.
    if (!idempotencyKey && isPlainRootRun(request) && !waitedChildrenOf([request], false)) {
      return { receipt: receipt(await this.createPlainRun(projectId, request)), replayed: false };
    }
    const result = await withIdempotency(
      this.deps.prisma,
      { projectId, operation: `run:${request.workflowId}`, key: idempotencyKey, request },
      async (tx) => {
        const { executions, after } = await this.create(tx, projectId, [request], false);
        return { status: 202, body: receipt(executions[0]!), after };
      },
    );
    if (result.after) await this.afterCreate(result.after);
    return { receipt: result.body, replayed: result.replayed };
  }

  /**
   * The hot path of a plain root run: one statement, then its job; or, for a workflow this process's
   * push dispatcher pushes, inserted and started on a push worker together, with no job.
   */
  private async createPlainRun(
    projectId: string,
    request: RunRequest,
    id: string = randomUUID(),
    starter = this.starterFor(projectId, request),
  ) {
    const { execution } = starter
      ? await starter.createAndStart(projectId, request, id)
      : await this.createAndEnqueue(projectId, request, id);
    this.deps.metrics.runsCreated([execution]);
    return execution;
  }

  /** Who starts a new plain root run without a job in this process, if anyone. */
  private starterFor(projectId: string, request: RunRequest): RunsStartedWithoutJob | undefined {
    return this.withoutJob.find((s) => s.serves(projectId, request.workflowId));
  }

  private async createAndEnqueue(projectId: string, request: RunRequest, id: string) {
    const created = await createRootRun(this.deps.pool, projectId, request, id);
    await this.deps.dispatcher.dispatch([created.dispatch]);
    return created;
  }

  /** Starts several runs, all or nothing, receipts in request order. */
  async runBatch(projectId: string, requests: RunRequest[], idempotencyKey?: string | null) {
    const result = await withIdempotency(
      this.deps.prisma,
      { projectId, operation: "batch_run", key: idempotencyKey, request: requests },
      async (tx) => {
        const { executions, after } = await this.create(tx, projectId, requests, true);
        return { status: 202, body: executions.map(receipt), after };
      },
    );
    if (result.after) await this.afterCreate(result.after);
    return { receipts: result.body, replayed: result.replayed };
  }

  /** New runs, or children their running parent waits for (`wait_for_subworkflow` with a step key). */
  private async create(
    tx: Prisma.TransactionClient,
    projectId: string,
    requests: RunRequest[],
    batch: boolean,
  ) {
    const waited = waitedChildrenOf(requests, batch);
    if (!waited) {
      const { executions, dispatch } = await createExecutions(
        tx,
        projectId,
        requests,
        this.deps.limits.maxQueuesPerProject,
      );
      return { executions, after: { created: executions, dispatch, parent: null, spans: [] } };
    }
    const { executions, ...after } = await startWaitedChildren(this.deps, tx, projectId, waited, requests);
    return { executions, after };
  }

  private async afterCreate(after: {
    created: Execution[];
    dispatch: DispatchRequest[];
    parent: Execution | null;
    spans: SpanRow[];
  }) {
    this.deps.metrics.runsCreated(after.created);
    this.deps.traces.publish(after.spans);
    await this.deps.dispatcher.dispatch(after.dispatch);
    // A parent that started children it waits for has parked: its turn is over.
    if (after.parent) await afterTurn(this.deps, after.parent);
  }

  async get(projectId: string, executionId: string): Promise<ExecutionView> {
    const row = isUuid(executionId)
      ? (
          await this.deps.pool.query<Execution>({
            name: "spool_get_execution",
            text: GET_EXECUTION,
            values: [executionId, projectId],
          })
        ).rows[0]
      : null;
    if (!row) throw notFound("execution", executionId);
    const suspendedData =
      row.status === "suspended" && row.suspendedStepKey
        ? ((
            await this.deps.prisma.wait.findUnique({
              where: { executionId_stepKey: { executionId: row.id, stepKey: row.suspendedStepKey } },
              select: { payload: true },
            })
          )?.payload ?? null)
        : null;
    const blocked = row.status === "queued" ? await blockedRuns(this.deps.prisma, [row]) : null;
    return { ...row, suspendedData, blocked: blocked?.get(row.id) ?? null };
  }

  /** Newest first, keyset-paged on (created_at, id). */
  async list(
    projectId: string,
    filter: ListExecutionsFilter,
    page: { limit: number; cursor?: string },
  ): Promise<{ items: ExecutionView[]; nextCursor: string | null }> {
    const where: Prisma.ExecutionWhereInput = {
      projectId,
      ...(filter.workflowId ? { workflowId: filter.workflowId } : {}),
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.queueName ? { queueName: filter.queueName } : {}),
      ...(filter.parentExecutionId ? { parentExecutionId: filter.parentExecutionId } : {}),
      ...(filter.createdAfter || filter.createdBefore
        ? {
            createdAt: {
              ...(filter.createdAfter ? { gte: filter.createdAfter } : {}),
              ...(filter.createdBefore ? { lt: filter.createdBefore } : {}),
            },
          }
        : {}),
    };
    const blockedOnly = filter.blocked
      ? await blockedFilter(this.deps.prisma, projectId, filter.blocked)
      : {};
    const rows = await this.deps.prisma.execution.findMany({
      where: {
        AND: [where, blockedOnly, createdAfterField("createdAt", decodeTimeCursor(page.cursor), "desc")],
      },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: page.limit + 1,
    });
    const { items, nextCursor } = toPage(rows, page.limit, (e) => timeCursorOf(e.createdAt, e.id));
    const blocked = await blockedRuns(this.deps.prisma, items);
    // A list shows no suspended data (GET of the run does).
    return {
      items: items.map((e) => ({ ...e, suspendedData: null, blocked: blocked.get(e.id) ?? null })),
      nextCursor,
    };
  }

  /** One page of a run's steps, stored and pending, in the order it reached them (list-steps.ts). */
  steps(projectId: string, executionId: string, page: { limit: number; cursor?: string }) {
    return listSteps(this.deps.prisma, executionId, page, () => this.get(projectId, executionId));
  }

  resume(projectId: string, executionId: string, data: unknown) {
    return resumeExecution(this.deps, this.events, { projectId, executionId, data });
  }

  cancel(projectId: string, executionId: string) {
    return cancelExecution(this.deps, { projectId, executionId });
  }

  // ---- worker side -------------------------------------------------------------------------

  async start(executionId: string, dispatchSeq: number, workerId: string | null) {
    const result = await startExecution(this.deps, { executionId, dispatchSeq, workerId });
    if (result.status === "started") this.deps.metrics.runStarted(result.execution);
    return result;
  }

  /** A new run's start, written with its first step (deferred-start.ts); `onStarted` once it is taken. */
  deferStart(
    run: DeferredJob | { executionId: string; taking: Taking },
    onStarted: (row: Execution) => void,
    deferMs?: number,
  ) {
    return new DeferredStart(this.deps, run, onStarted, deferMs);
  }

  /**
   * Resolves once the run is no longer running under `lease` (it settled, was handed back, or
   * started again elsewhere), or after `timeoutMs` with the run as it stands.
   */
  untilLeaves(
    executionId: string,
    lease: number,
    timeoutMs: number,
    o: {
      /**
       * The run as its start just left it: watched from here without reading it. A transition
       * announced between that start and this call is seen at the watcher's next re-check.
       */
      started?: Execution;
      signal?: AbortSignal;
    } = {},
  ) {
    const { started } = o;
    return this.deps.watcher.wait(
      executionId,
      async () => {
        const row = await this.row(executionId);
        if (!row) throw notFound("execution", executionId);
        return row;
      },
      timeoutMs,
      {
        done: (e) => e.status !== "running" || e.lease !== lease,
        // A finished run's announced row is the committed one.
        fromAnnounced: (row) => row,
        first: started && (async () => started),
        signal: o.signal,
      },
    );
  }

  /** An execution by id, whatever its project (the engine's own reads: dispatchers, workers). */
  async row(executionId: string): Promise<Execution | undefined> {
    const { rows } = await this.deps.pool.query<Execution>({
      name: "spool_execution_by_id",
      text: GET_EXECUTION_BY_ID,
      values: [executionId],
    });
    return rows[0];
  }

  notLoaded(execution: Execution, claim: Claim, workerId: string | null) {
    return handBackNotLoaded(this.deps, { execution, claim, workerId });
  }

  /** The run's journal; `loaded` is what its start already read (StartResult.journal). */
  journal(executionId: string, store: StepStore, loaded?: JournalRows) {
    return loadJournal(this.deps, executionId, store, loaded);
  }

  complete(
    executionId: string,
    claim: Claim,
    result: unknown,
    o: Pick<Parameters<typeof completeExecution>[1], "fresh" | "lastStep"> = {},
  ) {
    return completeExecution(this.deps, { executionId, claim, result, ...o });
  }

  fail(args: Parameters<typeof failExecution>[1]) {
    return failExecution(this.deps, args);
  }

  block(args: Parameters<typeof blockExecution>[1]) {
    return blockExecution(this.deps, args);
  }

  release(executionId: string, claim?: Claim, delayMs?: number) {
    return releaseExecution(this.deps, { executionId, claim, delayMs });
  }

  fireTimer(waitId: string) {
    return fireTimer(this.deps, waitId);
  }
}
