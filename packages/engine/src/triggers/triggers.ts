import type { EventTrigger, PrismaClient } from "@spool/db";
import {
  badRequest,
  conflict,
  decodeTimeCursor,
  isUuid,
  notFound,
  timeCursorOf,
  toPage,
} from "@spool/shared";
import type { Redis } from "ioredis";
import { isRegistered } from "../registry/is-registered.js";
import { announceChange } from "../util/announce.js";
import { createdAfter } from "../util/keyset.js";

export interface RegisterTriggerInput {
  workflowId: string;
  deploymentId: string;
  eventTopic: string;
  batchSize: number;
  batchTimeoutSeconds?: number | null;
  queueName?: string | null;
}

/**
 * Announced (payload: the project's id) after a trigger is registered, resumed or paused: a resumed
 * trigger may have a backlog to fire at once, a new timeout a batch due sooner.
 */
export const TRIGGERS_CHANNEL = "spool:triggers";

/** Registration and reading of event triggers. Firing lives in fire-triggers.ts. */
export class Triggers {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly redis?: Pick<Redis, "publish">,
  ) {}

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
    if (!(await isRegistered(this.prisma, { projectId, ...input })))
      throw notFound("workflow", `${input.workflowId}' in deployment '${input.deploymentId}`);
    const project = await this.prisma.project.findUniqueOrThrow({
      where: { id: projectId },
      select: { eventSequence: true },
    });
    const fields = {
      deploymentId: input.deploymentId,
      batchSize: input.batchSize,
      batchTimeoutSeconds: input.batchTimeoutSeconds ?? null,
      queueName: input.queueName ?? null,
    };
    const key = { projectId, workflowId: input.workflowId, eventTopic: input.eventTopic };
    const trigger = await this.prisma.eventTrigger.upsert({
      where: { projectId_workflowId_eventTopic: key },
      create: {
        projectId,
        workflowId: input.workflowId,
        eventTopic: input.eventTopic,
        lastSequenceId: project.eventSequence,
        ...fields,
      },
      update: fields,
    });
    // Registered again, a trigger paused because nothing served its workflow resumes; one paused
    // through the API stays paused (every worker start registers what its code declares).
    if (trigger.status === "active" || trigger.pausedByUser)
      return announceChange(this.redis, TRIGGERS_CHANNEL, projectId, trigger);
    const [resumed] = await this.prisma.eventTrigger.updateManyAndReturn({
      where: { ...key, status: "paused", pausedByUser: false },
      data: { status: "active" },
    });
    return announceChange(this.redis, TRIGGERS_CHANNEL, projectId, resumed ?? trigger);
  }

  /**
   * Pauses or resumes a trigger. Paused, it fires nothing and keeps its cursor: the events published
   * meanwhile are batched once it resumes. 409 when resuming a trigger whose workflow no worker
   * registers any more (it resumes by itself when one does).
   */
  async setStatus(projectId: string, triggerId: string, status: "active" | "paused"): Promise<EventTrigger> {
    const trigger = isUuid(triggerId)
      ? await this.prisma.eventTrigger.findFirst({ where: { id: triggerId, projectId } })
      : null;
    if (!trigger) throw notFound("event trigger", triggerId);
    if (status === "active") {
      if (!(await isRegistered(this.prisma, trigger))) {
        throw conflict(
          `workflow '${trigger.workflowId}' is not registered in deployment '${trigger.deploymentId}'; ` +
            "the trigger resumes when a worker registers it again",
        );
      }
    }
    const updated = await this.prisma.eventTrigger.update({
      where: { id: trigger.id },
      data: { status, pausedByUser: status === "paused" },
    });
    return announceChange(this.redis, TRIGGERS_CHANNEL, projectId, updated);
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
