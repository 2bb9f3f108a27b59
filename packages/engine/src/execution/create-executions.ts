import { randomUUID } from "node:crypto";
import { type Db, type Execution, type JsonInput, jsonOrNull } from "@spool/db";
import { isUuid, notFound } from "@spool/shared";
import { type DispatchRequest, runJobId } from "../dispatch/dispatcher.js";

export const DEFAULT_QUEUE = "default";

export interface RunRequest {
  workflowId: string;
  input: unknown;
  deploymentId?: string | null;
  queueName?: string | null;
  concurrencyKey?: string | null;
  runTimeoutSeconds?: number | null;
  initialState?: unknown;
  sessionId?: string | null;
  userId?: string | null;
  parentExecutionId?: string | null;
  rootExecutionId?: string | null;
  stepKey?: string | null;
  waitForSubworkflow?: boolean | null;
  otelTraceparent?: string | null;
  channelContext?: unknown;
  /** The limit of the run's queue, when the queue does not exist yet. */
  queueConcurrencyLimit?: number | null;
}

/** A queue a run request created, with the limit to apply to its BullMQ queue after commit. */
export interface NewQueue {
  projectId: string;
  name: string;
  concurrencyLimit: number;
}

/**
 * Inserts queued executions (all or nothing, inside the caller's transaction) and returns them
 * with the dispatches to send once that transaction has committed, and the queues it created.
 */
export async function createExecutions(
  tx: Db,
  projectId: string,
  requests: RunRequest[],
): Promise<{ executions: Execution[]; dispatch: DispatchRequest[]; queues: NewQueue[] }> {
  const executions: Execution[] = [];
  const queues: NewQueue[] = [];
  for (const r of requests) {
    const registration = await tx.workflowRegistration.findFirst({
      where: {
        projectId,
        workflowId: r.workflowId,
        ...(r.deploymentId ? { deploymentId: r.deploymentId } : {}),
      },
      orderBy: { updatedAt: "desc" },
    });
    if (!registration) {
      throw notFound(
        "workflow",
        r.deploymentId ? `${r.workflowId}' in deployment '${r.deploymentId}` : r.workflowId,
      );
    }
    let rootExecutionId: string | null = null;
    if (r.parentExecutionId) {
      const parent = isUuid(r.parentExecutionId)
        ? await tx.execution.findFirst({ where: { id: r.parentExecutionId, projectId } })
        : null;
      if (!parent) throw notFound("parent execution", r.parentExecutionId);
      rootExecutionId = parent.rootExecutionId ?? parent.id;
    }
    const id = randomUUID();
    const now = new Date();
    executions.push(
      await tx.execution.create({
        data: {
          id,
          projectId,
          workflowId: r.workflowId,
          workflowType: registration.workflowType,
          deploymentId: registration.deploymentId,
          queueName: r.queueName ?? registration.queueName ?? DEFAULT_QUEUE,
          status: "queued",
          input: (r.input ?? {}) as JsonInput,
          concurrencyKey: r.concurrencyKey ?? null,
          parentExecutionId: r.parentExecutionId ?? null,
          // A root execution is its own root: one trace per root (trace_id = root id).
          rootExecutionId: rootExecutionId ?? r.rootExecutionId ?? id,
          stepKey: r.stepKey ?? null,
          waitForSubworkflow: r.waitForSubworkflow ?? false,
          runTimeoutSeconds: r.runTimeoutSeconds ?? null,
          deadlineAt: r.runTimeoutSeconds ? new Date(now.getTime() + r.runTimeoutSeconds * 1000) : null,
          initialState: jsonOrNull(r.initialState),
          sessionId: r.sessionId ?? null,
          userId: r.userId ?? null,
          otelTraceparent: r.otelTraceparent ?? null,
          channelContext: jsonOrNull(r.channelContext),
          createdAt: now,
        },
      }),
    );
  }
  for (const [i, r] of requests.entries()) {
    const name = executions[i]!.queueName;
    if (!r.queueConcurrencyLimit || queues.some((q) => q.name === name)) continue;
    const created = await tx.queue.createMany({
      data: [{ projectId, name, concurrencyLimit: r.queueConcurrencyLimit }],
      skipDuplicates: true,
    });
    if (created.count === 1) queues.push({ projectId, name, concurrencyLimit: r.queueConcurrencyLimit });
  }
  return { executions, dispatch: executions.map(runDispatch), queues };
}

export const runDispatch = (e: Execution): DispatchRequest => ({
  projectId: e.projectId,
  queueName: e.queueName,
  jobId: runJobId(e.id, e.dispatchSeq),
  data: { kind: "run", projectId: e.projectId, executionId: e.id, dispatchSeq: e.dispatchSeq },
});
