import type { Prisma, PrismaClient } from "@spool/db";
import { conflict, notFound } from "@spool/shared";
import { NON_TERMINAL } from "../execution/statuses.js";

/*
 * Archiving a workflow or a deployment that no worker serves any more: it leaves the lists, cannot be
 * run, and its triggers and schedules pause (nothing could take what they would start). Refused (409)
 * while a worker of its deployment is online (it would register it again at its next start) or while
 * it has runs not finished (archiving would strand them). A worker registering it again brings it
 * back (triggers resume when they are registered again; schedules when PATCHed to active).
 *
 * The registrations are archived first and the runs counted after, in the same transaction: a run
 * created once the archive commits finds no registration, and one committed before is counted. (A
 * run whose creation is in flight across both statements can still slip through; locking the
 * registration on every run's start would cost the hot path for this cold one.)
 */

/** 409 when a worker of one of `deploymentIds` is online or draining. */
async function assertNotServed(
  tx: Prisma.TransactionClient,
  projectId: string,
  deploymentIds: string[],
  what: string,
) {
  const serving = await tx.worker.count({
    where: { projectId, deploymentId: { in: deploymentIds }, status: { in: ["online", "draining"] } },
  });
  if (serving > 0) {
    throw conflict(`${what} is served by ${serving} online worker(s); stop them first`, {
      online_workers: serving,
    });
  }
}

/** 409 when runs matching `where` are not finished. */
async function assertNoActiveRuns(
  tx: Prisma.TransactionClient,
  where: Prisma.ExecutionWhereInput,
  what: string,
) {
  const active = await tx.execution.count({ where: { ...where, status: { in: NON_TERMINAL } } });
  if (active > 0) {
    throw conflict(`${what} has ${active} run(s) not finished; cancel them or let them finish first`, {
      active_runs: active,
    });
  }
}

/** Pauses the triggers and schedules of workflows that no registration that is not archived serves. */
async function pauseOrphanedAutomation(
  tx: Prisma.TransactionClient,
  projectId: string,
  workflowIds: string[],
) {
  const served = await tx.workflowRegistration.findMany({
    where: { projectId, workflowId: { in: workflowIds }, archivedAt: null },
    select: { workflowId: true },
  });
  const orphaned = workflowIds.filter((id) => !served.some((s) => s.workflowId === id));
  if (orphaned.length === 0) return;
  const where = { projectId, workflowId: { in: orphaned }, status: "active" };
  await tx.eventTrigger.updateMany({ where, data: { status: "paused" } });
  await tx.schedule.updateMany({ where, data: { status: "paused" } });
}

/** Archives every registration of a workflow (an agent's or tool's description goes with it). */
export async function archiveWorkflow(
  prisma: PrismaClient,
  projectId: string,
  workflowId: string,
): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const registrations = await tx.workflowRegistration.findMany({
      where: { projectId, workflowId, archivedAt: null },
      select: { deploymentId: true },
    });
    if (registrations.length === 0) throw notFound("workflow", workflowId);
    const what = `workflow '${workflowId}'`;
    await assertNotServed(
      tx,
      projectId,
      registrations.map((r) => r.deploymentId),
      what,
    );
    await tx.workflowRegistration.updateMany({
      where: { projectId, workflowId, archivedAt: null },
      data: { archivedAt: new Date() },
    });
    await assertNoActiveRuns(tx, { projectId, workflowId }, what);
    await tx.agent.deleteMany({ where: { projectId, agentId: workflowId } });
    await tx.tool.deleteMany({ where: { projectId, toolId: workflowId } });
    await pauseOrphanedAutomation(tx, projectId, [workflowId]);
  });
}

/** Archives a deployment and the registrations of its workflows. */
export async function archiveDeployment(
  prisma: PrismaClient,
  projectId: string,
  deploymentId: string,
): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const deployment = await tx.deployment.findUnique({
      where: { projectId_deploymentId: { projectId, deploymentId } },
      select: { status: true },
    });
    if (!deployment || deployment.status === "archived") throw notFound("deployment", deploymentId);
    const what = `deployment '${deploymentId}'`;
    await assertNotServed(tx, projectId, [deploymentId], what);
    await tx.deployment.update({
      where: { projectId_deploymentId: { projectId, deploymentId } },
      data: { status: "archived" },
    });
    const registrations = await tx.workflowRegistration.findMany({
      where: { projectId, deploymentId, archivedAt: null },
      select: { workflowId: true },
    });
    await tx.workflowRegistration.updateMany({
      where: { projectId, deploymentId, archivedAt: null },
      data: { archivedAt: new Date() },
    });
    await assertNoActiveRuns(tx, { projectId, deploymentId }, what);
    await tx.agent.deleteMany({ where: { projectId, deploymentId } });
    await tx.tool.deleteMany({ where: { projectId, deploymentId } });
    await pauseOrphanedAutomation(
      tx,
      projectId,
      registrations.map((r) => r.workflowId),
    );
  });
}
