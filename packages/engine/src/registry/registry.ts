import {
  type Agent,
  type Deployment,
  type JsonInput,
  jsonOrNull,
  Prisma,
  type PrismaClient,
  type Queue,
  type Tool,
  type WorkflowRegistration,
} from "@spool/db";
import { badRequest, decodeCursor, notFound, toPage } from "@spool/shared";
import type { EngineLimits } from "../deps.js";
import { archiveDeployment, archiveWorkflow } from "./archive.js";
import { assertRoomForQueues } from "./queue-cap.js";
import { listQueueStates } from "./queue-states.js";

export type WorkflowType = "workflow" | "agent" | "tool";

export interface WorkflowRegistrationInput {
  workflowId: string;
  workflowType: WorkflowType;
  triggerOnEvent?: boolean | null;
  scheduled?: boolean | null;
  queueName?: string | null;
}

export interface AgentInput {
  agentId: string;
  deploymentId?: string | null;
  provider: string;
  model: string;
  systemPrompt?: string | null;
  tools?: unknown[] | null;
  temperature?: number | null;
  maxOutputTokens?: number | null;
  config?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
}

export interface ToolInput {
  toolId: string;
  deploymentId?: string | null;
  toolType?: string | null;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
}

type Page = { limit: number; cursor?: string };

/** Registrations are keyed by a client id; pages are ordered by it. */
const byClientId = (id: string) => ({ k: id, id });

/**
 * What workers host: deployments (named versions of worker code), the workflows, agents and tools in
 * them, and the project's queues. Every registration is an upsert, so a restarting worker can
 * re-register freely. "Latest" means most recently (re-)registered.
 */
export class Registry {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly limits: EngineLimits,
  ) {}

  registerDeployment(projectId: string, deploymentId: string): Promise<Deployment> {
    return this.prisma.deployment.upsert({
      where: { projectId_deploymentId: { projectId, deploymentId } },
      create: { projectId, deploymentId, status: "active" },
      // Touch updated_at so the latest registered deployment is the "latest".
      update: { status: "active", updatedAt: new Date() },
    });
  }

  async getDeployment(projectId: string, deploymentId: string) {
    const deployment = await this.prisma.deployment.findUnique({
      where: { projectId_deploymentId: { projectId, deploymentId } },
      include: { workflows: { where: { archivedAt: null }, orderBy: { workflowId: "asc" } } },
    });
    if (!deployment) throw notFound("deployment", deploymentId);
    return deployment;
  }

  async listDeployments(projectId: string, page: Page) {
    const after = decodeCursor(page.cursor);
    const rows = await this.prisma.deployment.findMany({
      where: { projectId, status: { not: "archived" }, ...(after ? { deploymentId: { gt: after.id } } : {}) },
      orderBy: { deploymentId: "asc" },
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (d) => byClientId(d.deploymentId));
  }

  /** The explicit deployment (404 when unknown) or the project's latest one (400 when none). */
  async resolveDeployment(projectId: string, deploymentId?: string | null): Promise<string> {
    if (deploymentId) {
      const found = await this.prisma.deployment.count({ where: { projectId, deploymentId } });
      if (!found) throw notFound("deployment", deploymentId);
      return deploymentId;
    }
    const latest = await this.prisma.deployment.findFirst({
      where: { projectId, status: { not: "archived" } },
      orderBy: { updatedAt: "desc" },
    });
    if (!latest) throw badRequest("the project has no deployment yet; register one or pass deployment_id");
    return latest.deploymentId;
  }

  async registerWorkflows(
    projectId: string,
    deploymentId: string,
    workflows: WorkflowRegistrationInput[],
  ): Promise<WorkflowRegistration[]> {
    await this.resolveDeployment(projectId, deploymentId);
    return this.prisma.$transaction(
      workflows.map((w) => {
        const fields = {
          workflowType: w.workflowType,
          triggerOnEvent: w.triggerOnEvent ?? false,
          scheduled: w.scheduled ?? false,
          queueName: w.queueName ?? null,
        };
        return this.prisma.workflowRegistration.upsert({
          where: { projectId_deploymentId_workflowId: { projectId, deploymentId, workflowId: w.workflowId } },
          create: { projectId, deploymentId, workflowId: w.workflowId, ...fields },
          // Registering an archived workflow brings it back.
          update: { ...fields, archivedAt: null },
        });
      }),
    );
  }

  /** One row per workflow id: its most recently registered deployment. */
  async listWorkflows(projectId: string, page: Page) {
    const after = decodeCursor(page.cursor);
    const rows = await this.prisma.workflowRegistration.findMany({
      where: { projectId, archivedAt: null, ...(after ? { workflowId: { gt: after.id } } : {}) },
      orderBy: [{ workflowId: "asc" }, { updatedAt: "desc" }],
      distinct: ["workflowId"],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (w) => byClientId(w.workflowId));
  }

  async getWorkflow(
    projectId: string,
    workflowId: string,
    deploymentId?: string,
  ): Promise<WorkflowRegistration> {
    const row = await this.prisma.workflowRegistration.findFirst({
      where: { projectId, workflowId, archivedAt: null, ...(deploymentId ? { deploymentId } : {}) },
      orderBy: { updatedAt: "desc" },
    });
    if (!row)
      throw notFound("workflow", deploymentId ? `${workflowId}' in deployment '${deploymentId}` : workflowId);
    return row;
  }

  /**
   * Upserts queues. A limit that is omitted leaves the stored one as it is (a worker that merely
   * serves a queue must not lift the limit another one declared); `null` removes it. A queue named
   * after a workflow of the deployment registered without a queue becomes that workflow's queue: the
   * worker protocol's convention (its SDKs name a workflow's queue after the workflow and register
   * the workflow without it).
   */
  async registerQueues(
    projectId: string,
    deploymentId: string,
    queues: { name: string; concurrencyLimit?: number | null }[],
  ): Promise<Queue[]> {
    await this.resolveDeployment(projectId, deploymentId);
    await assertRoomForQueues(
      this.prisma,
      projectId,
      queues.map((q) => q.name),
      this.limits.maxQueuesPerProject,
    );
    const rows = await this.prisma.$transaction(
      queues.map((q) =>
        this.prisma.queue.upsert({
          where: { projectId_name: { projectId, name: q.name } },
          create: { projectId, name: q.name, concurrencyLimit: q.concurrencyLimit ?? null },
          // Never an empty update: Prisma turns that into a read then an insert, which races with
          // another worker registering the same queue (unique violation); this is one INSERT … ON CONFLICT.
          update:
            q.concurrencyLimit === undefined
              ? { updatedAt: new Date() }
              : { concurrencyLimit: q.concurrencyLimit },
        }),
      ),
    );
    // Purpose: see above. Params: project, deployment, queue names. Locks: the rows updated.
    await this.prisma.$executeRaw(Prisma.sql`
      UPDATE workflow_registrations SET queue_name = workflow_id, updated_at = now()
      WHERE project_id = ${projectId}::uuid AND deployment_id = ${deploymentId} AND queue_name IS NULL
        AND workflow_id = ANY(${rows.map((q) => q.name)}::text[])`);
    // Limits are counted at each start (execution/take-run.ts); runs waiting for a slot that a
    // raised limit frees are woken by the scheduler's sweep.
    return rows;
  }

  /** The project's queues with their limits, counts and consumers (GET /queues). */
  listQueues(projectId: string, page: Page) {
    return listQueueStates(this.prisma, projectId, page);
  }

  /** Archives a workflow no worker serves any more (see archive.ts). */
  archiveWorkflow(projectId: string, workflowId: string) {
    return archiveWorkflow(this.prisma, projectId, workflowId);
  }

  /** Archives a deployment no worker runs any more (see archive.ts). */
  archiveDeployment(projectId: string, deploymentId: string) {
    return archiveDeployment(this.prisma, projectId, deploymentId);
  }

  getQueue(projectId: string, name: string): Promise<Queue | null> {
    return this.prisma.queue.findUnique({ where: { projectId_name: { projectId, name } } });
  }

  /** An agent is also a workflow (type "agent"), so it runs through the workflow run route. */
  async registerAgent(projectId: string, input: AgentInput): Promise<Agent> {
    const deploymentId = await this.resolveDeployment(projectId, input.deploymentId);
    const fields = {
      provider: input.provider,
      model: input.model,
      systemPrompt: input.systemPrompt ?? null,
      tools: (input.tools ?? []) as JsonInput,
      temperature: input.temperature ?? null,
      maxOutputTokens: input.maxOutputTokens ?? null,
      config: jsonOrNull(input.config),
      metadata: jsonOrNull(input.metadata),
    };
    const [agent] = await this.prisma.$transaction([
      this.prisma.agent.upsert({
        where: { projectId_deploymentId_agentId: { projectId, deploymentId, agentId: input.agentId } },
        create: { projectId, deploymentId, agentId: input.agentId, ...fields },
        update: fields,
      }),
      this.upsertRegistration(projectId, deploymentId, input.agentId, "agent"),
    ]);
    return agent;
  }

  async listAgents(projectId: string, page: Page) {
    const after = decodeCursor(page.cursor);
    const rows = await this.prisma.agent.findMany({
      where: { projectId, ...(after ? { agentId: { gt: after.id } } : {}) },
      orderBy: [{ agentId: "asc" }, { updatedAt: "desc" }],
      distinct: ["agentId"],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (a) => byClientId(a.agentId));
  }

  async getAgent(projectId: string, agentId: string): Promise<Agent> {
    const row = await this.prisma.agent.findFirst({
      where: { projectId, agentId },
      orderBy: { updatedAt: "desc" },
    });
    if (!row) throw notFound("agent", agentId);
    return row;
  }

  async registerTool(projectId: string, input: ToolInput): Promise<Tool> {
    const deploymentId = await this.resolveDeployment(projectId, input.deploymentId);
    const fields = {
      toolType: input.toolType ?? "default",
      description: input.description ?? null,
      parameters: jsonOrNull(input.parameters),
      metadata: jsonOrNull(input.metadata),
    };
    const [tool] = await this.prisma.$transaction([
      this.prisma.tool.upsert({
        where: { projectId_deploymentId_toolId: { projectId, deploymentId, toolId: input.toolId } },
        create: { projectId, deploymentId, toolId: input.toolId, ...fields },
        update: fields,
      }),
      this.upsertRegistration(projectId, deploymentId, input.toolId, "tool"),
    ]);
    return tool;
  }

  async listTools(projectId: string, page: Page) {
    const after = decodeCursor(page.cursor);
    const rows = await this.prisma.tool.findMany({
      where: { projectId, ...(after ? { toolId: { gt: after.id } } : {}) },
      orderBy: [{ toolId: "asc" }, { updatedAt: "desc" }],
      distinct: ["toolId"],
      take: page.limit + 1,
    });
    return toPage(rows, page.limit, (t) => byClientId(t.toolId));
  }

  async getTool(projectId: string, toolId: string): Promise<Tool> {
    const row = await this.prisma.tool.findFirst({
      where: { projectId, toolId },
      orderBy: { updatedAt: "desc" },
    });
    if (!row) throw notFound("tool", toolId);
    return row;
  }

  private upsertRegistration(
    projectId: string,
    deploymentId: string,
    workflowId: string,
    workflowType: WorkflowType,
  ) {
    return this.prisma.workflowRegistration.upsert({
      where: { projectId_deploymentId_workflowId: { projectId, deploymentId, workflowId } },
      create: { projectId, deploymentId, workflowId, workflowType },
      update: { workflowType, archivedAt: null },
    });
  }
}
