// The `spool` command, run as a user runs it (node packages/cli/bin/spool.mjs, what `npx spool`
// starts), against a real Spool: the API in-process on a real port, real worker processes.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useAgentSystem } from "./agent-system.js";
import { eventually, type System, startSystem } from "./harness.js";

const BIN = fileURLToPath(new URL("../../packages/cli/bin/spool.mjs", import.meta.url));

/** The environment a user exports for the CLI (no dev.json here). */
const envOf = (sys: System) => ({
  ...process.env,
  SPOOL_API_URL: sys.apiUrl,
  SPOOL_API_KEY: sys.apiKey,
  SPOOL_PROJECT_ID: sys.projectId,
  SPOOL_DATA_DIR: "/nonexistent",
});

/** Starts `spool <args>`; its output accumulates as it comes. */
function start(sys: System, args: string[]) {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    env: envOf(sys),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const run = { stdout: "", stderr: "", code: null as number | null };
  child.stdout?.on("data", (d: Buffer) => {
    run.stdout += d;
  });
  child.stderr?.on("data", (d: Buffer) => {
    run.stderr += d;
  });
  const exited = new Promise<typeof run>((resolve) =>
    child.once("exit", (code) => {
      run.code = code;
      resolve(run);
    }),
  );
  return { child, run, exited };
}

const spool = (sys: System, ...args: string[]) => start(sys, args).exited;

describe("spool, the CLI", () => {
  let sys: System;
  beforeAll(async () => {
    sys = await startSystem();
    await sys.startWorker();
  });
  afterAll(() => sys?.stop());

  it("run --wait shows each step as it completes and the result; exit 0", async () => {
    const r = await spool(sys, "run", "three-steps", "--input", '{"n":1}', "--wait");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^started [0-9a-f-]{36}$/);
    expect(lines.filter((l) => l.startsWith("✓ ")).map((l) => l.split(" ")[1])).toEqual([
      "add-one",
      "double",
      "describe",
    ]);
    expect(JSON.parse(/^completed: (.*)$/m.exec(r.stdout)?.[1] ?? "null")).toEqual({
      a: 2,
      b: 4,
      c: "n=1 -> 4",
    });
  });

  it("a run that fails exits 1 with its error; --json prints the run as JSON", async () => {
    const r = await spool(sys, "run", "fatal", "--wait", "--json");
    expect(r.code).toBe(1);
    const run = JSON.parse(r.stdout) as { status: string; error: { message: string } };
    expect(run).toMatchObject({ status: "failed", error: { message: "order total is negative" } });
  });

  it("resumes a suspended run and waits for it; cancels a sleeping one", async () => {
    const { execution_id } = await sys.client.run("approval", { amount: 7 });
    await sys.client.executions.waitForResult(execution_id, { until: "blocked" });
    const resumed = await spool(
      sys,
      "runs",
      "resume",
      execution_id,
      "--data",
      '{"approved":true,"by":"cli"}',
      "--wait",
    );
    expect(resumed.code).toBe(0);
    const result = /^completed: (.*)$/m.exec(resumed.stdout)?.[1];
    expect(JSON.parse(result ?? "null")).toEqual({ cents: 700, approved: true, by: "cli" });

    const sleeper = (await sys.client.run("sleeper", { ms: 600_000 })).execution_id;
    await sys.client.executions.waitForResult(sleeper, { until: "blocked" });
    const steps = await spool(sys, "runs", "steps", sleeper);
    expect(steps.stdout).toMatch(/nap\s+sleep\s+pending/);
    const cancelled = await spool(sys, "runs", "cancel", sleeper);
    expect(cancelled.stdout.trim()).toBe(`${sleeper} cancelled`);
    const got = JSON.parse((await spool(sys, "runs", "get", sleeper, "--json")).stdout) as { status: string };
    expect(got.status).toBe("cancelled");
  });

  it("lists as a table for people and as JSON for scripts", async () => {
    const table = await spool(sys, "runs", "list", "--workflow", "three-steps");
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+CREATED\s+TOOK$/);
    const json = JSON.parse(
      (await spool(sys, "runs", "list", "--workflow", "three-steps", "--json")).stdout,
    ) as {
      executions: { workflow_id: string; status: string }[];
    };
    expect(json.executions.length).toBeGreaterThanOrEqual(1);
    expect(json.executions.every((e) => e.workflow_id === "three-steps")).toBe(true);
    const queues = JSON.parse((await spool(sys, "queues", "--json")).stdout) as {
      queues: { name: string }[];
    };
    expect(queues.queues.map((q) => q.name)).toContain("limited");
    const workers = await spool(sys, "workers");
    expect(workers.stdout).toMatch(/default\s+queue\s+online/);
  });

  it("errors show the API's message and exit non-zero; usage errors exit 2", async () => {
    const missing = await spool(sys, "runs", "get", "4f0c7a1e-0000-4000-8000-000000000000");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      "execution '4f0c7a1e-0000-4000-8000-000000000000' not found (404 NOT_FOUND)",
    );
    const unknown = await spool(sys, "run", "no-such-workflow");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("workflow 'no-such-workflow' not found");
    const badJson = await spool(sys, "run", "three-steps", "--input", "{nope");
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain("--input is not JSON");
    expect((await spool(sys, "runs")).code).toBe(2);
  });
});

describe("spool logs --follow", () => {
  const env = useAgentSystem();

  it("prints an agent's text as it streams, then ends with the run", async () => {
    const words = ["Snow ", "over ", "Oslo ", "tonight, ", "minus ", "four."];
    env.llm.script({ text: words.join(""), chunks: words, chunkDelayMs: 300 });
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "Oslo?" });
    const logs = start(env.sys, ["logs", execution_id, "--follow"]);
    // The first words are on screen while the model is still answering.
    await eventually(
      async () => (logs.run.stdout.includes("Snow over") ? true : undefined),
      30_000,
      "the first words",
    );
    expect((await env.sys.client.executions.get(execution_id)).status).not.toBe("completed");
    const r = await logs.exited;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Snow over Oslo tonight, minus four.");
    expect(r.stdout).toContain("[finished");
  }, 90_000);
});
