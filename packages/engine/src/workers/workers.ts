import { randomBytes } from "node:crypto";
import type { PrismaClient, Worker } from "@spool/db";
import { badRequest, decodeTimeCursor, isUuid, notFound, timeCursorOf, toPage } from "@spool/shared";
import { createdAfterField } from "../util/keyset.js";

export type WorkerMode = "queue" | "push" | "pull";
export type WorkerStatus = "online" | "offline" | "draining";

export interface WorkerCapabilities {
  runtime?: string | null;
  workflow_ids?: string[] | null;
  agent_ids?: string[] | null;
  tool_ids?: string[] | null;
  queues?: string[] | null;
  /** The worker proves the push's claim on its calls (Spool's SDK): see pushBeforeInsert. */
  spool_claims?: boolean | null;
  /** The worker takes pushes in batches (`POST …/execute-batch`, Spool's SDK): see PushSender. */
  spool_push_batches?: boolean | null;
}

export interface RegisterWorkerInput {
  deploymentId: string;
  mode: WorkerMode;
  /** How often the worker promises to heartbeat; a push worker's default is the Polos SDK's 30 s. */
  heartbeatIntervalSeconds?: number | null;
  capabilities?: WorkerCapabilities | null;
  maxConcurrentExecutions?: number | null;
  pushEndpointUrl?: string | null;
  hostname?: string | null;
}

/** A worker silent for this many heartbeat intervals is offline (contract: 3). */
export const MISSED_HEARTBEATS_BEFORE_OFFLINE = 3;
/** The Polos SDKs heartbeat every 30 s, whatever the server says: offline after 90 s of silence. */
export const PUSH_HEARTBEAT_INTERVAL_SECONDS = 30;

/**
 * Whether another online worker of the project says it runs this workflow (its registered
 * capabilities): during a rolling deploy, an old worker hands a new workflow's run to a new one.
 */
export async function servedElsewhere(
  prisma: PrismaClient,
  projectId: string,
  workflowId: string,
  exceptWorkerId: string | null,
): Promise<boolean> {
  const found = await prisma.worker.count({
    where: {
      projectId,
      status: "online",
      ...(exceptWorkerId ? { id: { not: exceptWorkerId } } : {}),
      capabilities: { path: ["workflow_ids"], array_contains: [workflowId] },
    },
  });
  return found > 0;
}

/** After `failures` pushes in a row failed, no run is pushed to the worker for this long. */
const pushBackoffMs = (failures: number) => Math.min(30_000, 500 * 2 ** Math.min(failures - 1, 10));
/**
 * A worker that answered 429 (at capacity) is left alone this long. Spool's own count said it had
 * room, so it is most likely still winding down a run whose outcome Spool has stored (the answer to
 * its completion on the way back): a moment, not a second, under a steady load at its max. One that
 * answers 429 again within BUSY_PAUSE_AGAIN_MS of its last pause (a cancelled run still finishing
 * its step there, say) is left alone for that long.
 */
const BUSY_PAUSE_MS = 100;
const BUSY_PAUSE_AGAIN_MS = 1000;

/**
 * What a push told about its worker. Failed pushes pause it with growing backoff (its runs go to
 * other workers meanwhile) but never take it offline: only 90 s without a heartbeat does. A 400
 * "Worker ID mismatch" means the process at that URL re-registered: this id is gone for good.
 */
export async function recordPushOutcome(
  prisma: PrismaClient,
  worker: Pick<Worker, "id" | "pushFailures" | "pushPausedUntil">,
  outcome: "accepted" | "busy" | "failed" | "mismatch",
): Promise<void> {
  const now = Date.now();
  const workerId = worker.id;
  switch (outcome) {
    case "accepted":
      // Nothing to clear when the worker was in good standing as it was read for this push.
      if (worker.pushFailures === 0 && worker.pushPausedUntil === null) return;
      await prisma.worker.updateMany({
        where: { id: workerId, OR: [{ pushFailures: { gt: 0 } }, { pushPausedUntil: { not: null } }] },
        data: { pushFailures: 0, pushPausedUntil: null },
      });
      return;
    case "busy": {
      // Paused lately, and no push taken since (that clears the pause): busy, not winding down.
      const again =
        worker.pushPausedUntil !== null && worker.pushPausedUntil.getTime() > now - BUSY_PAUSE_AGAIN_MS;
      await prisma.worker.update({
        where: { id: workerId },
        data: { pushPausedUntil: new Date(now + (again ? BUSY_PAUSE_AGAIN_MS : BUSY_PAUSE_MS)) },
      });
      return;
    }
    case "failed": {
      const w = await prisma.worker.update({
        where: { id: workerId },
        data: { pushFailures: { increment: 1 } },
      });
      await prisma.worker.update({
        where: { id: workerId },
        data: { pushPausedUntil: new Date(now + pushBackoffMs(w.pushFailures)) },
      });
      return;
    }
    case "mismatch":
      await prisma.worker.update({ where: { id: workerId }, data: { status: "offline" } });
  }
}

/** Whether a push worker of the project, online or not, advertises the workflow. */
export async function servedByAnyPushWorker(prisma: PrismaClient, projectId: string, workflowId: string) {
  const found = await prisma.worker.count({
    where: {
      projectId,
      mode: "push",
      capabilities: { path: ["workflow_ids"], array_contains: [workflowId] },
    },
  });
  return found > 0;
}

export class Workers {
  constructor(
    private readonly prisma: PrismaClient,
    readonly heartbeatIntervalSeconds: number,
  ) {}

  /**
   * Registers a worker process. Its deployment is created if it does not exist yet (a remote worker
   * registers itself before its deployment). A push worker gets the secret its pushes are signed
   * with, and is judged by the heartbeat interval it keeps (the Polos SDKs beat every 30 s).
   */
  async register(projectId: string, input: RegisterWorkerInput): Promise<Worker> {
    if (input.mode === "push" && !input.pushEndpointUrl) {
      throw badRequest("a push worker needs push_endpoint_url: Spool sends its runs there");
    }
    // INSERT … ON CONFLICT DO NOTHING: workers of one deployment start together, and an upsert
    // that changes nothing is a read then an insert in Prisma, which races into a unique violation.
    await this.prisma.deployment.createMany({
      data: [{ projectId, deploymentId: input.deploymentId, status: "active" }],
      skipDuplicates: true,
    });
    const push = input.mode === "push";
    return this.prisma.worker.create({
      data: {
        projectId,
        deploymentId: input.deploymentId,
        mode: input.mode,
        status: "online",
        capabilities: (input.capabilities ?? {}) as object,
        maxConcurrentExecutions: input.maxConcurrentExecutions ?? null,
        pushEndpointUrl: input.pushEndpointUrl ?? null,
        pushSecret: push ? randomBytes(32).toString("base64url") : null,
        hostname: input.hostname ?? null,
        heartbeatIntervalSeconds:
          input.heartbeatIntervalSeconds ??
          (push ? PUSH_HEARTBEAT_INTERVAL_SECONDS : this.heartbeatIntervalSeconds),
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
