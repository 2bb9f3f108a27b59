// From durable state to span rows: one execution, its steps and its waits. Pure, so the shapes are
// easy to see and test; record-spans.ts does the writing.
import type { Execution, Prisma, StepResult, Wait } from "@spool/db";
import { Prisma as P } from "@spool/db";
import { isTerminal, type SpanType, traceIdOf } from "@spool/shared";
import type { StepRecord } from "../runtime/journal.js";
import { llmTrace } from "../runtime/tool-step.js";
import { spanIdOf } from "./span-ids.js";

export type SpanRow = Prisma.SpanUncheckedCreateInput;

const json = (v: unknown) => (v === undefined || v === null ? P.DbNull : (v as Prisma.InputJsonValue));

/**
 * An execution's own span id, derived once for a run of consecutive calls about one execution: each
 * of its step spans names it as parent, and a completion builds them all together.
 */
let lastExecutionSpan = { executionId: "", spanId: "" };
function executionSpanId(executionId: string): string {
  if (lastExecutionSpan.executionId !== executionId) {
    lastExecutionSpan = { executionId, spanId: spanIdOf(executionId) };
  }
  return lastExecutionSpan.spanId;
}

const stepSpanType = (kind: string): SpanType => (kind === "llm" ? "llm" : kind === "tool" ? "tool" : "step");

/** The execution's own span; a child's hangs under the parent's step that started it. */
export function executionSpan(e: Execution): SpanRow {
  const parentSpanId = e.parentExecutionId ? spanIdOf(e.parentExecutionId, e.stepKey ?? null) : null;
  const endedAt = isTerminal(e.status) ? (e.completedAt ?? e.cancelledAt ?? e.updatedAt) : null;
  return {
    spanId: executionSpanId(e.id),
    traceId: traceIdOf(e.rootExecutionId ?? e.id),
    projectId: e.projectId,
    executionId: e.id,
    parentSpanId,
    name: e.workflowId,
    // workflow | agent | tool, as registered when the run was created.
    spanType: e.workflowType,
    workflowId: e.workflowId,
    status: e.status,
    attributes: {
      execution_id: e.id,
      workflow_id: e.workflowId,
      attempt: e.attempt,
      queue_name: e.queueName,
      deployment_id: e.deploymentId,
      // A run going for another attempt is not in error (has_error=false); it shows why it retries.
      ...(e.status !== "failed" && e.error ? { last_attempt_error: e.error as Prisma.InputJsonValue } : {}),
    },
    input: json(e.input),
    output: json(e.result),
    error: json(e.status === "failed" ? e.error : null),
    startedAt: e.startedAt ?? e.createdAt,
    endedAt,
  };
}

const stepBase = (e: Pick<Execution, "id" | "projectId" | "rootExecutionId">, stepKey: string) => ({
  spanId: spanIdOf(e.id, stepKey),
  traceId: traceIdOf(e.rootExecutionId ?? e.id),
  projectId: e.projectId,
  executionId: e.id,
  parentSpanId: executionSpanId(e.id),
  name: stepKey,
});

/** A step this worker just ran: everything is known, including what was sent (LLM messages, tool input). */
export function stepSpan(e: Pick<Execution, "id" | "projectId" | "rootExecutionId">, r: StepRecord): SpanRow {
  const latencyMs = r.endedAt.getTime() - r.startedAt.getTime();
  return {
    ...stepBase(e, r.stepKey),
    spanType: stepSpanType(r.kind),
    status: r.status,
    attributes: {
      step_key: r.stepKey,
      kind: r.kind,
      attempts: r.attempts,
      ...(r.kind === "llm" ? { "llm.latency_ms": latencyMs } : {}),
      ...r.attributes,
    },
    input: json(r.input),
    output: json(r.output),
    error: json(r.error),
    startedAt: r.startedAt,
    endedAt: r.endedAt,
  };
}

/**
 * A stored step whose span this worker never wrote (it ran in a worker that died before its span
 * was written). The input is not stored with the step, so this span has none.
 */
export function storedStepSpan(e: Execution, s: StepResult): SpanRow {
  const described =
    s.kind === "llm" && s.status === "completed" ? llmTrace(undefined).describe?.(s.output) : undefined;
  return {
    ...stepBase(e, s.stepKey),
    spanType: stepSpanType(s.kind),
    status: s.status,
    attributes: { step_key: s.stepKey, kind: s.kind, attempts: s.attempts, ...described?.attributes },
    output: json(s.output),
    error: json(s.error),
    startedAt: s.startedAt ?? s.completedAt ?? e.createdAt,
    endedAt: s.completedAt,
  };
}

/** A step answered from outside (sleep, event, resume, child run): open while pending, one span throughout. */
export function waitSpan(e: Execution, w: Wait): SpanRow {
  const failed = w.status === "timed_out" || w.status === "cancelled";
  return {
    ...stepBase(e, w.stepKey),
    spanType: "step",
    status: w.status,
    attributes: {
      step_key: w.stepKey,
      kind: w.kind,
      ...(w.topic ? { topic: w.topic } : {}),
      ...(w.childExecutionId ? { child_execution_id: w.childExecutionId } : {}),
    },
    input: json(w.payload),
    output: json(w.resolvedData),
    error: failed
      ? { name: w.status === "timed_out" ? "StepTimeoutError" : "Cancelled", message: `wait ${w.status}` }
      : P.DbNull,
    startedAt: w.createdAt,
    endedAt: w.resolvedAt,
  };
}

/** A span sent by a remote worker, in the contract's shape (null meaning "no value"). */
export function ingestedRow(
  projectId: string,
  s: {
    trace_id: string;
    span_id: string;
    parent_span_id?: string | null;
    name: string;
    span_type: SpanType;
    attributes?: Record<string, unknown> | null;
    events?: unknown;
    input?: unknown;
    output?: unknown;
    error?: unknown;
    initial_state?: unknown;
    final_state?: unknown;
    started_at?: string | null;
    ended_at?: string | null;
  },
): SpanRow {
  const attr = (k: string) => (typeof s.attributes?.[k] === "string" ? (s.attributes[k] as string) : null);
  // Kept with the span, in its attributes, when the worker sends them.
  const extra = Object.fromEntries(
    (["events", "initial_state", "final_state"] as const).flatMap((k) =>
      s[k] === null || s[k] === undefined ? [] : [[k, s[k]]],
    ),
  );
  const endedAt = s.ended_at ? new Date(s.ended_at) : null;
  return {
    spanId: s.span_id,
    traceId: s.trace_id,
    projectId,
    parentSpanId: s.parent_span_id ?? null,
    // The trace list filters on these root-span columns; a remote worker names them as attributes.
    workflowId: attr("workflow_id"),
    status: attr("status"),
    name: s.name,
    spanType: s.span_type,
    attributes: { ...(s.attributes ?? {}), ...extra } as Prisma.InputJsonValue,
    input: json(s.input),
    output: json(s.output),
    error: json(s.error),
    startedAt: s.started_at ? new Date(s.started_at) : (endedAt ?? new Date()),
    endedAt,
  };
}
