import type { PrismaClient, Worker } from "@spool/db";
import { decodeTimeCursor, isUuid, notFound, timeCursorOf, toPage } from "@spool/shared";
import { createdAfterField } from "../util/keyset.js";

export type WorkerMode = "queue" | "push" | "pull";
export type WorkerStatus = "online" | "offline" | "draining";

export interface WorkerCapabilities {
  runtime?: string | null;
  workflow_ids?: string[] | null;
  agent_ids?: string[] | null;
  tool_ids?: string[] | null;
  queues?: string[] | null;
}

export interface RegisterWorkerInput {
  deploymentId: string;
  mode: WorkerMode;
  capabilities?: WorkerCapabilities | null;
  maxConcurrentExecutions?: number | null;
  pushEndpointUrl?: string | null;
  hostname?: string | null;
}

/** A worker silent for this many heartbeat intervals is offline (contract: 3). */
export const MISSED_HEARTBEATS_BEFORE_OFFLINE = 3;

export class Workers {
  constructor(
    private readonly prisma: PrismaClient,
    readonly heartbeatIntervalSeconds: number,
  ) {}

  /**
   * Whether another online worker of the project says it runs this workflow (its registered
   * capabilities): during a rolling deploy, an old worker hands a new workflow's run to a new one.
   */
  async servedElsewhere(
    projectId: string,
    workflowId: string,
    exceptWorkerId: string | null,
  ): Promise<boolean> {
    const found = await this.prisma.worker.count({
      where: {
        projectId,
        status: "online",
        ...(exceptWorkerId ? { id: { not: exceptWorkerId } } : {}),
        capabilities: { path: ["workflow_ids"], array_contains: [workflowId] },
      },
    });
    return found > 0;
  }

  async register(projectId: string, input: RegisterWorkerInput): Promise<Worker> {
    const deployment = await this.prisma.deployment.count({
      where: { projectId, deploymentId: input.deploymentId },
    });
    if (!deployment) throw notFound("deployment", input.deploymentId);
    return this.prisma.worker.create({
      data: {
        projectId,
        deploymentId: input.deploymentId,
        mode: input.mode,
        status: "online",
        capabilities: (input.capabilities ?? {}) as object,
        maxConcurrentExecutions: input.maxConcurrentExecutions ?? null,
        pushEndpointUrl: input.pushEndpointUrl ?? null,
        hostname: input.hostname ?? null,
        heartbeatIntervalSeconds: this.heartbeatIntervalSeconds,
      },
    });
  }

  /**
   * Records a heartbeat. A worker the server has forgotten or marked offline is told to
   * re-register (its running executions may already have been handed to others).
   */
  async heartbeat(
    projectId: string,
    workerId: string,
    running?: number | null,
  ): Promise<{ reRegister: boolean }> {
    if (!isUuid(workerId)) return { reRegister: true };
    const updated = await this.prisma.worker.updateMany({
      where: { id: workerId, projectId, status: { in: ["online", "draining"] } },
      data: { lastHeartbeatAt: new Date(), ...(running == null ? {} : { runningExecutions: running }) },
    });
    return { reRegister: updated.count === 0 };
  }

  async setStatus(projectId: string, workerId: string, status: WorkerStatus): Promise<Worker> {
    await this.get(projectId, workerId);
    return this.prisma.worker.update({
      where: { id: workerId },
      data: { status, ...(status === "online" ? { lastHeartbeatAt: new Date() } : {}) },
    });
  }

  async get(projectId: string, workerId: string): Promise<Worker> {
    const worker = isUuid(workerId)
      ? await this.prisma.worker.findFirst({ where: { id: workerId, projectId } })
      : null;
    if (!worker) throw notFound("worker", workerId);
    return worker;
  }

  async list(
    projectId: string,
    filter: { deploymentId?: string; status?: WorkerStatus },
    page: { limit: number; cursor?: string },
  ) {
    const rows = await this.prisma.worker.findMany({
      where: {
        projectId,
        ...(filter.deploymentId ? { deploymentId: filter.deploymentId } : {}),
        ...(filter.status ? { status: filter.status } : {}),
        ...createdAfterField("registeredAt", decodeTimeCursor(page.cursor)),
      },
      orderBy: [{ registeredAt: "asc" }, { id: "asc" }],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (w) => timeCursorOf(w.registeredAt, w.id));
  }

  async status(projectId: string, deploymentId: string) {
    const onlineCount = await this.prisma.worker.count({
      where: { projectId, deploymentId, status: "online" },
    });
    return { onlineCount, hasWorkers: onlineCount > 0 };
  }

  async activeIds(projectId: string): Promise<string[]> {
    const rows = await this.prisma.worker.findMany({
      where: { projectId, status: "online" },
      select: { id: true },
      orderBy: { registeredAt: "asc" },
    });
    return rows.map((r) => r.id);
  }
}
