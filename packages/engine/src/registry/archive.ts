import type { Prisma, PrismaClient } from "@spool/db";
import { conflict, notFound } from "@spool/shared";
import { NON_TERMINAL } from "../execution/statuses.js";

/*
 * Archiving a workflow or a deployment that no worker serves any more: it leaves the lists, cannot be
 * run, and its triggers and schedules pause (nothing could take what they would start). Refused (409)
 * while it has runs not finished: archiving would strand them. A worker registering it again brings it
 * back (triggers resume when they are registered again; schedules when PATCHed to active).
 */

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
    await assertNoActiveRuns(tx, { projectId, workflowId }, `workflow '${workflowId}'`);
    await tx.workflowRegistration.updateMany({
      where: { projectId, workflowId, archivedAt: null },
      data: { archivedAt: new Date() },
    });
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
    await assertNoActiveRuns(tx, { projectId, deploymentId }, `deployment '${deploymentId}'`);
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
    await tx.agent.deleteMany({ where: { projectId, deploymentId } });
    await tx.tool.deleteMany({ where: { projectId, deploymentId } });
    await pauseOrphanedAutomation(
      tx,
      projectId,
      registrations.map((r) => r.workflowId),
    );
  });
}
