// An Engine over the test Redis and a database of this test file's own, with a fresh project that
// has one deployment. Own database: these tests drive global loops (schedule firing with a clock set
// years ahead, sweeps) that would otherwise act on other test files' rows.
import { randomBytes } from "node:crypto";
import { createPrisma } from "@spool/db";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { deployMigrations } from "../../db/scripts/migrate.mjs";
import { Engine } from "../src/engine.js";

let fileDatabase: Promise<string> | undefined;

/** One migrated database per test file, dropped when the file is done. */
function databaseOfThisFile(): Promise<string> {
  fileDatabase ??= (async () => {
    const name = `spool_engine_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(inject("databaseUrl"));
    url.pathname = `/${name}`;
    await deployMigrations(url.toString());
    afterAll(async () => {
      const drop = new pg.Client({ connectionString: inject("databaseUrl") });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    });
    return url.toString();
  })();
  return fileDatabase;
}

export async function createTestEngine(options: { clock?: () => Date; workflows?: string[] } = {}) {
  const prisma = createPrisma({ databaseUrl: await databaseOfThisFile(), maxConnections: 5 });
  const redis = new Redis(inject("redisUrl"), { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on("error", () => {});
  const engine = new Engine({
    prisma,
    redis,
    redisUrl: inject("redisUrl"),
    logger: createLogger("engine-test", "silent"),
    clock: options.clock,
  });
  afterAll(async () => {
    await engine.close();
    await prisma.$disconnect();
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
