import type { Prisma } from "@spool/db";

/**
 * Whether a workflow can be run: registered and not archived, in `deploymentId` or (without one) in
 * any deployment. The one test of it, for whatever starts runs of a workflow later (triggers,
 * schedules, child runs) and for what registers them.
 */
export async function isRegistered(
  db: Pick<Prisma.TransactionClient, "workflowRegistration">,
  w: { projectId: string; workflowId: string; deploymentId?: string },
): Promise<boolean> {
  const found = await db.workflowRegistration.findFirst({
    where: {
      projectId: w.projectId,
      workflowId: w.workflowId,
      archivedAt: null,
      ...(w.deploymentId ? { deploymentId: w.deploymentId } : {}),
    },
    select: { workflowId: true },
  });
  return found !== null;
}
