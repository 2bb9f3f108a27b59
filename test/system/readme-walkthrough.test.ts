// The README's walk-through, pasted into bash right after `npm run dev` printed its banner on a fresh
// data directory: the blocks marked `<!-- walk-through -->` run in one shell, every curl must get a
// 2xx, and what they started must end as the README says. So the README cannot drift from the code.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@spool/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, freePort } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The bash blocks of the README marked as the walk-through, in order. */
function walkthroughBlocks(readme: string): string[] {
  return [...readme.matchAll(/<!-- walk-through -->\n```bash\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("the README walk-through, pasted on a fresh npm run dev", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "spool-readme-"));
  let dev: ChildProcess;
  let output = "";

  beforeAll(async () => {
    // Nothing from the test setup: dev starts its own Postgres and Redis, as on a new machine.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !["DATABASE_URL", "REDIS_URL"].includes(k)),
    );
    dev = spawn("npm", ["run", "dev"], {
      cwd: ROOT,
      env: { ...env, PORT: String(await freePort()), SPOOL_DATA_DIR: dataDir, SPOOL_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    dev.stdout?.on("data", (d: Buffer) => {
      output += d;
    });
    dev.stderr?.on("data", (d: Buffer) => {
      output += d;
    });
    await eventually(
      async () => (output.includes("Spool is running") ? true : undefined),
      120_000,
      "the banner",
    );
  }, 150_000);

  afterAll(async () => {
    if (dev && dev.exitCode === null) {
      const exited = new Promise((r) => dev.once("exit", r));
      dev.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("every marked block runs, each curl answered 2xx, and what it started ends as described", () => {
    const blocks = walkthroughBlocks(readFileSync(join(ROOT, "README.md"), "utf8"));
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    // As pasted, with two guards a person does by eye: stop at the first error, and treat a non-2xx
    // answer as one (the README's `curl -s` would print it and go on).
    const script = [
      "set -euo pipefail",
      'curl() { command curl --fail-with-body "$@"; }',
      ...blocks.map((b, i) => `echo "### block ${i + 1}"\n${b}`),
      'echo "### ids"; echo "$ID"',
    ].join("\n");
    const run = spawnSync("bash", ["-c", script], {
      cwd: ROOT,
      env: { ...process.env, SPOOL_DATA_DIR: dataDir },
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    // The approval run was answered as soon as it suspended (until=blocked), then completed.
    expect(run.stdout).toContain('"status":"suspended"');
    expect(run.stdout).toMatch(/"status":"completed"[^\n]*"outcome":"paid"/);
    expect(run.stdout).toMatch(/"status":"completed"[^\n]*"paymentId":"pay_o-1_24"/);
  });

  it("the trigger's batch run (order-digest) completes with the two orders", async () => {
    const saved = JSON.parse(readFileSync(join(dataDir, "dev.json"), "utf8")) as {
      api_url: string;
      api_key: string;
      project_id: string;
      database_url: string;
      redis_url: string;
    };
    expect(saved.database_url).toMatch(/^postgres(ql)?:\/\//);
    expect(saved.redis_url).toMatch(/^redis:\/\//);
    const client = createClient({
      baseUrl: saved.api_url,
      apiKey: saved.api_key,
      projectId: saved.project_id,
    });
    const [digest] = await eventually(
      async () => {
        const { executions } = await client.executions.list({ workflow_id: "order-digest" });
        return executions.length > 0 ? executions : undefined;
      },
      30_000,
      "the digest run",
    );
    const done = await client.executions.waitForResult(digest!.id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({
      status: "completed",
      result: { orders: 2, orderIds: ["o-1", "o-2"], total: 29 },
    });
  });
});
