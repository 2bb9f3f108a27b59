// The README's walk-through, pasted into bash right after `npm run dev` printed its banner on a fresh
// data directory: the blocks marked `<!-- walk-through -->` run in one shell, every curl must get a
// 2xx, and what they started must end as the README says. So the README cannot drift from the code.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createClient } from "@spool/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevProcess, ROOT, startDev } from "./dev-process.js";
import { eventually } from "./harness.js";

/** The bash blocks of the README marked as the walk-through, in order. */
function walkthroughBlocks(readme: string): string[] {
  return [...readme.matchAll(/<!-- walk-through -->\n```bash\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe("the README walk-through, pasted on a fresh npm run dev", () => {
  let dev: DevProcess;

  // Nothing from the test setup: dev starts its own Postgres and Redis, as on a new machine.
  beforeAll(async () => {
    dev = await startDev({ services: "own", viaNpm: true });
  }, 150_000);
  afterAll(() => dev?.stop());

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
      env: { ...process.env, SPOOL_DATA_DIR: dev.dataDir },
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
    const saved = dev.devJson();
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
