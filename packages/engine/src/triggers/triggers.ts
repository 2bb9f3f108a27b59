import type { EventTrigger, PrismaClient } from "@spool/db";
import { badRequest, decodeTimeCursor, isUuid, notFound, timeCursorOf, toPage } from "@spool/shared";
import { createdAfter } from "../util/keyset.js";

export interface RegisterTriggerInput {
  workflowId: string;
  deploymentId: string;
  eventTopic: string;
  batchSize: number;
  batchTimeoutSeconds?: number | null;
  queueName?: string | null;
}

/** Registration and reading of event triggers. Firing lives in fire-triggers.ts. */
export class Triggers {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Upserts the trigger of (workflow, topic). A new trigger starts at the project's current event
   * sequence, so it never receives the topic's history; re-registering keeps its cursor.
   */
  async register(projectId: string, input: RegisterTriggerInput): Promise<EventTrigger> {
    if (!Number.isInteger(input.batchSize) || input.batchSize < 1)
      throw badRequest("batch_size must be an integer >= 1");
    const deployment = await this.prisma.deployment.count({
      where: { projectId, deploymentId: input.deploymentId },
    });
    if (!deployment) throw notFound("deployment", input.deploymentId);
    const workflow = await this.prisma.workflowRegistration.count({
      where: { projectId, deploymentId: input.deploymentId, workflowId: input.workflowId, archivedAt: null },
    });
    if (!workflow) throw notFound("workflow", `${input.workflowId}' in deployment '${input.deploymentId}`);
    const project = await this.prisma.project.findUniqueOrThrow({
      where: { id: projectId },
      select: { eventSequence: true },
    });
    const fields = {
      deploymentId: input.deploymentId,
      batchSize: input.batchSize,
      batchTimeoutSeconds: input.batchTimeoutSeconds ?? null,
      queueName: input.queueName ?? null,
      status: "active",
    };
    return this.prisma.eventTrigger.upsert({
      where: {
        projectId_workflowId_eventTopic: {
          projectId,
          workflowId: input.workflowId,
          eventTopic: input.eventTopic,
        },
      },
      create: {
        projectId,
        workflowId: input.workflowId,
        eventTopic: input.eventTopic,
        lastSequenceId: project.eventSequence,
        ...fields,
      },
      update: fields,
    });
  }

  async list(projectId: string, page: { limit: number; cursor?: string }) {
    const rows = await this.prisma.eventTrigger.findMany({
      where: { projectId, ...createdAfter(decodeTimeCursor(page.cursor)) },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (t) => timeCursorOf(t.createdAt, t.id));
  }

  async remove(projectId: string, triggerId: string): Promise<void> {
    const deleted = isUuid(triggerId)
      ? await this.prisma.eventTrigger.deleteMany({ where: { id: triggerId, projectId } })
      : { count: 0 };
    if (deleted.count === 0) throw notFound("event trigger", triggerId);
  }
}
