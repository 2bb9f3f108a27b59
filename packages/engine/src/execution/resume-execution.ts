import type { Execution, Wait } from "@spool/db";
import { conflict, isUuid, notFound } from "@spool/shared";
import { type EngineDeps, TX_OPTIONS } from "../deps.js";
import type { Events } from "../events/events.js";
import { lockProjectExecution } from "./lock.js";
import { resolveWait } from "./resolve-wait.js";

const notSuspended = (status: string) =>
  conflict(`execution is ${status}, not suspended; only a suspended execution can be resumed`, { status });

/**
 * suspended → queued: the suspended step returns `data`. 409 unless the execution is suspended;
 * 404 for an unknown id or another project's. A remote worker's suspend is answered by an event
 * (`resume_<step_key>` on the run's topic, see the worker protocol): resume publishes that event for
 * the caller, and the publish settles the wait.
 */
export async function resumeExecution(
  deps: EngineDeps,
  events: Events,
  args: { projectId: string; executionId: string; data: unknown },
): Promise<Execution> {
  const byEvent = await openEventSuspend(deps, args);
  if (byEvent) {
    let resumed: Execution | undefined;
    await events.publish(
      args.projectId,
      byEvent.topic!,
      [{ eventType: byEvent.eventType, data: (args.data ?? {}) as Record<string, unknown> }],
      null,
      {
        // In the publish's transaction, after the project lock (publish's lock order): nothing is
        // published unless the run is still suspended on that wait.
        guard: async (tx) => {
          const row = await lockProjectExecution(tx, args.projectId, args.executionId);
          if (row.status !== "suspended") throw notSuspended(row.status);
          if (!(await tx.wait.count({ where: { id: byEvent.id, status: "pending" } })))
            throw conflict("execution has no open suspend step to resume");
        },
        // The run resumed is the one named: runs of the same tree share the topic, and another one
        // suspended on the same step key is not answered by this resume.
        onlyExecutionId: byEvent.executionId,
        // The run as the resume left it (queued), not as a worker may have taken it since.
        settled: async (tx) => {
          resumed = await tx.execution.findUniqueOrThrow({ where: { id: byEvent.executionId } });
        },
      },
    );
    if (!resumed) throw new Error("the resume's publish settled nothing");
    return resumed;
  }
  const result = await deps.prisma.$transaction(async (tx) => {
    const row = await lockProjectExecution(tx, args.projectId, args.executionId);
    if (row.status !== "suspended") throw notSuspended(row.status);
    const wait = await tx.wait.findFirst({
      where: {
        executionId: row.id,
        kind: "suspend",
        status: "pending",
        ...(row.suspendedStepKey ? { stepKey: row.suspendedStepKey } : {}),
      },
      orderBy: { seq: "asc" },
    });
    if (!wait) throw conflict("execution has no open suspend step to resume");
    const dispatch = await resolveWait(tx, wait, { status: "resolved", output: args.data ?? {} });
    const resumed = await tx.execution.findUniqueOrThrow({ where: { id: row.id } });
    return { resumed, dispatch };
  }, TX_OPTIONS);
  if (result.dispatch) await deps.dispatcher.dispatch([result.dispatch]);
  return result.resumed;
}

/** The open suspend of a suspended run when an event answers it (it has a topic), else null. */
async function openEventSuspend(
  deps: EngineDeps,
  args: { projectId: string; executionId: string },
): Promise<(Wait & { eventType: string }) | null> {
  const row = isUuid(args.executionId)
    ? await deps.prisma.execution.findFirst({
        where: { id: args.executionId, projectId: args.projectId },
        select: { status: true, suspendedStepKey: true },
      })
    : null;
  if (!row) throw notFound("execution", args.executionId);
  if (row.status !== "suspended") return null;
  const wait = await deps.prisma.wait.findFirst({
    where: {
      executionId: args.executionId,
      kind: "suspend",
      status: "pending",
      topic: { not: null },
      ...(row.suspendedStepKey ? { stepKey: row.suspendedStepKey } : {}),
    },
  });
  return wait ? { ...wait, eventType: wait.eventType ?? `resume_${wait.stepKey}` } : null;
}
