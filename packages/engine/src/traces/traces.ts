import type { Db, Execution, PrismaClient, pg } from "@spool/db";
import { DEFAULT_DETAIL_PAGE_SIZE, type Logger } from "@spool/shared";
import { lockExecution } from "../execution/lock.js";
import type { StepRecord } from "../runtime/journal.js";
import { getTrace, listTraces, type TraceFilter } from "./query-traces.js";
import {
  type ExecutionRef,
  ingestSpans,
  recordSteps,
  type SpanSink,
  spanRowsParam,
  syncExecutionSpans,
  upsertSpansFromJson,
} from "./record-spans.js";
import { executionSpan, ingestedRow, type SpanRow } from "./span-rows.js";

// Purpose: the running run's own span, only while it still runs under the lease that started it.
// Params: execution, lease, span rows. Locks: the execution row (the lock order of transitions:
// execution, then its spans). Result: none.
const SHOW_RUNNING = `
  WITH held AS (SELECT id FROM executions WHERE id = $1 AND status = 'running' AND lease = $2 FOR UPDATE)
  ${upsertSpansFromJson("$3", "EXISTS (SELECT 1 FROM held)")}`;

/** A span as a remote worker sends it (the contract's IngestSpan). */
export type IngestedSpan = Parameters<typeof ingestedRow>[1];

/**
 * Traces: a root execution and all its children are one trace (trace id = root execution id without
 * dashes); executions, steps, child runs, LLM calls and tool calls are spans. The engine owns every
 * span write; an optional sink (OTLP) gets each finished span after it is stored.
 */
export class Traces {
  private sink: SpanSink | null = null;
  /** A finished span goes to the sink once per process, however often it is re-synced. */
  private readonly exported = new Set<string>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
  ) {}

  exportTo(sink: SpanSink): void {
    this.sink = sink;
  }

  async recordSteps(execution: ExecutionRef, records: StepRecord[]): Promise<void> {
    this.export(await recordSteps(this.pool, execution, records));
  }

  /**
   * Brings an execution's spans up to date on their own (e.g. a run that has been going a while
   * shows as running). Locks the row first, so it cannot overwrite a newer state written by a
   * transition that commits meanwhile.
   */
  async sync(executionId: string): Promise<void> {
    const rows = await this.prisma.$transaction(async (tx) => {
      await lockExecution(tx, executionId);
      const execution = await tx.execution.findUnique({ where: { id: executionId } });
      return execution ? syncExecutionSpans(tx, execution) : [];
    });
    this.export(rows);
  }

  /**
   * The run's own span shows it running, as `started` (the row its start returned), while it still
   * runs under that start. One statement: it locks the row first, like a transition, so it cannot
   * overwrite the span a transition committing meanwhile writes.
   */
  async showRunning(started: Execution): Promise<void> {
    const span = executionSpan(started);
    await this.pool.query({
      name: "spool_show_running",
      text: SHOW_RUNNING,
      values: [started.id, started.lease, spanRowsParam([span])],
    });
    this.export([span]);
  }

  /**
   * The spans of an execution a transition has just written, inside that transition's transaction
   * (so a client that sees the new status finds a trace that agrees). Returns what to `publish`
   * once the transaction has committed.
   */
  syncInTransaction(tx: Db, execution: Execution): Promise<SpanRow[]> {
    return syncExecutionSpans(tx, execution);
  }

  /** Hands committed spans to the sink (OTLP), if any. */
  publish(rows: SpanRow[]): void {
    this.export(rows);
  }

  /** Spans from a remote worker (the contract's shape), stored under the caller's project. */
  async ingest(projectId: string, spans: IngestedSpan[]): Promise<number> {
    const rows = spans.map((s) => ingestedRow(projectId, s));
    const n = await ingestSpans(this.prisma, projectId, rows);
    this.export(rows);
    return n;
  }

  list(projectId: string, filter: TraceFilter, page: { limit: number; cursor?: string }) {
    return listTraces(this.prisma, projectId, filter, page);
  }

  /** One page of a trace's spans (the first, of the API's default size, unless told), with its summary. */
  get(
    projectId: string,
    traceId: string,
    page: { limit: number; cursor?: string } = { limit: DEFAULT_DETAIL_PAGE_SIZE },
  ) {
    return getTrace(this.prisma, projectId, traceId, page);
  }

  async close(): Promise<void> {
    await this.sink?.shutdown();
  }

  private export(rows: SpanRow[]): void {
    if (!this.sink) return;
    const done = rows.filter((r) => r.endedAt && !this.exported.has(r.spanId));
    if (done.length === 0) return;
    // Bounded memory in a long-lived worker; forgetting only risks a duplicate export, not a loss.
    if (this.exported.size > 100_000) this.exported.clear();
    for (const r of done) this.exported.add(r.spanId);
    try {
      this.sink.export(done);
    } catch (err) {
      this.logger.warn({ err: String(err) }, "span export failed");
    }
  }
}

export type { ExecutionRef, SpanRow, SpanSink, TraceFilter };
