// A Postgres of this file's own (durable, on a data directory kept across its restart), so the test
// may crash it: what an answer tells the client must still be there after a crash. It guards the
// one answer that comes while a run has had no write after its insert: `POST …/run?wait=` whose
// wait ran out (an asynchronous commit of that insert was tried and dropped; docs/benchmarks.md,
// thirteenth sitting: without a synchronous write before the answer, this test failed 2 times in 3).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpoolApiError } from "@spool/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployMigrations } from "../../packages/db/scripts/migrate.mjs";
import { crashPostgres, type ServicesHandle, startServicesProcess } from "../../scripts/services-client.mjs";
import { eventually, freePort, type System, startSystem } from "./harness.js";

describe("Postgres crash: a ?wait answer rests on a durable run", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "spool-pg-crash-"));
  let pg: ServicesHandle;
  let pgPort: number;
  let sys: System;

  const startPostgres = async () => {
    // Only Postgres: a set REDIS_URL is passed through (the test Redis is not this file's).
    pg = await startServicesProcess({
      dataDir,
      persistent: true,
      pgPort,
      env: { REDIS_URL: "redis://127.0.0.1:1" },
    });
  };

  beforeAll(async () => {
    pgPort = await freePort();
    await startPostgres();
    await deployMigrations(pg.databaseUrl);
    sys = await startSystem({ databaseUrl: pg.databaseUrl });
    // A workflow no worker serves: its runs stay queued, so the wait runs out.
    await sys.engine.registry.registerDeployment(sys.projectId, "d1");
    await sys.engine.registry.registerWorkflows(sys.projectId, "d1", [
      { workflowId: "unserved", workflowType: "workflow" },
    ]);
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await pg?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a run answered as still queued when its wait ran out is there after an immediate shutdown", async () => {
    const answered = await sys.client.runAndWait("unserved", { n: 1 }, { waitSeconds: 0.05 });
    // Queued: the wait ran out (the API answers 202 with the run as it stands).
    expect(answered.status).toBe("queued");

    crashPostgres(dataDir);
    await pg.exited;
    const before = pg.databaseUrl;
    await startPostgres();
    expect(pg.databaseUrl, "Postgres came back where the API connects").toBe(before);

    // The API's pool reconnects on its own; until it has, it answers 503. A lost run would be a 404.
    const found = await eventually(async () => {
      try {
        return await sys.client.executions.get(answered.execution_id);
      } catch (err) {
        if (err instanceof SpoolApiError && err.status === 503) return undefined;
        throw err;
      }
    }, 60_000);
    expect(found.status).toBe("queued");
  }, 120_000);
});
