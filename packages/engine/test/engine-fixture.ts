// An Engine over the test Redis and a database of this test file's own (file-database.ts), with a
// fresh project that has one deployment.
import { createDatabase } from "@spool/db";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, inject } from "vitest";
import { Engine } from "../src/engine.js";
import { databaseOfThisFile } from "./file-database.js";

export async function createTestEngine(
  options: { clock?: () => Date; workflows?: string[]; limits?: { maxQueuesPerProject?: number } } = {},
) {
  const { prisma, pool } = createDatabase({ databaseUrl: await databaseOfThisFile(), maxConnections: 5 });
  const redis = new Redis(inject("redisUrl"), { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on("error", () => {});
  const engine = new Engine({
    prisma,
    pool,
    redis,
    redisUrl: inject("redisUrl"),
    logger: createLogger("engine-test", "silent"),
    clock: options.clock,
    limits: options.limits,
  });
  afterAll(async () => {
    await engine.close();
    await prisma.$disconnect();
    await pool.end();
    redis.disconnect();
  });
  const project = await engine.projects.create({ name: "engine-test" });
  await engine.registry.registerDeployment(project.id, "d1");
  await engine.registry.registerWorkflows(
    project.id,
    "d1",
    (options.workflows ?? ["wf"]).map((workflowId) => ({ workflowId, workflowType: "workflow" })),
  );
  return { engine, prisma, projectId: project.id };
}

/** Starts a run as a worker would: the execution, or null when the job is stale (or the run held). */
export async function startedRun(
  engine: Engine,
  executionId: string,
  dispatchSeq: number,
  workerId: string | null = null,
) {
  const result = await engine.executions.start(executionId, dispatchSeq, workerId);
  return result.status === "started" ? result.execution : null;
}

/** A new run with a 5 s run timeout whose deadline has passed, as the timeout sweep finds it. */
export async function overdueRun(env: Awaited<ReturnType<typeof createTestEngine>>): Promise<string> {
  const { receipt } = await env.engine.executions.run(env.projectId, {
    workflowId: "wf",
    input: {},
    runTimeoutSeconds: 5,
  });
  await env.prisma.execution.update({
    where: { id: receipt.execution_id },
    data: { deadlineAt: new Date(Date.now() - 1) },
  });
  return receipt.execution_id;
}
