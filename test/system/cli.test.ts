// The `spool` command, run as a user runs it (node packages/cli/bin/spool.mjs, what `npx spool`
// starts), against a real Spool: the API in-process on a real port, real worker processes.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { runTopic } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse } from "../../packages/cli/src/sse.js";
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

  /** A usage error as a user sees it: exit 2, the message on stderr, no stack trace. */
  const expectUsageError = (r: { code: number | null; stderr: string; stdout: string }, message: string) => {
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain("(see spool --help)");
    expect(r.stderr).not.toMatch(/\n\s+at /);
  };

  it("--timeout that is not a number of seconds is a usage error; exit 2", async () => {
    const before = (await sys.client.executions.list({ workflow_id: "three-steps" })).executions.length;
    for (const timeout of ["abc", "-5", "", "1e3x"]) {
      const r = await spool(sys, "run", "three-steps", "--wait", `--timeout=${timeout}`);
      expectUsageError(r, `--timeout must be a number of seconds (0 or more), not '${timeout}'`);
    }
    expectUsageError(
      await spool(sys, "runs", "resume", "4f0c7a1e-0000-4000-8000-000000000000", "--timeout", "soon"),
      "--timeout must be a number of seconds",
    );
    // Nothing was started.
    expect((await sys.client.executions.list({ workflow_id: "three-steps" })).executions.length).toBe(before);
  });

  it("runs resume --data that is not JSON (or not an object) is a usage error; exit 2", async () => {
    const id = "4f0c7a1e-0000-4000-8000-000000000000";
    expectUsageError(await spool(sys, "runs", "resume", id, "--data", "{nope"), "--data is not JSON");
    expectUsageError(
      await spool(sys, "runs", "resume", id, "--data", "[1,2]"),
      "--data must be a JSON object",
    );
  });

  it("an @file that is missing is a usage error naming the file; exit 2", async () => {
    expectUsageError(
      await spool(sys, "run", "three-steps", "--input", "@missing.json"),
      "--input: cannot read file 'missing.json': no such file",
    );
    expectUsageError(
      await spool(sys, "runs", "resume", "4f0c7a1e-0000-4000-8000-000000000000", "--data", "@missing.json"),
      "--data: cannot read file 'missing.json': no such file",
    );
    expectUsageError(
      await spool(sys, "events", "publish", "t", "--data", "@/nonexistent/dir/x.json"),
      "--data: cannot read file '/nonexistent/dir/x.json': no such file",
    );
    // A directory is not readable as a file either.
    expectUsageError(
      await spool(sys, "run", "three-steps", "--input", `@${fileURLToPath(new URL(".", import.meta.url))}`),
      "it is a directory",
    );
  });

  it("logs --follow of a run that fails exits 1 with how it ended", async () => {
    const { execution_id } = await sys.client.run("fatal", {});
    const r = await spool(sys, "logs", execution_id, "--follow");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`spool: run ${execution_id} failed: `);
    expect(r.stderr).toContain("order total is negative");
    // A run that has already ended: at once, the same way.
    const again = await spool(sys, "logs", execution_id, "--follow");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`spool: run ${execution_id} failed: `);
    const done = (await sys.client.run("quick", {})).execution_id;
    await sys.client.executions.waitForResult(done);
    const ok = await spool(sys, "logs", done, "--follow");
    // Nothing on stderr but, if the stream opened before the end was known, the notice that it did.
    expect(ok.stderr.replace(`spool: following run ${done} (Ctrl-C stops)\n`, "")).toBe("");
    expect(ok.code).toBe(0);
  });

  it("logs --follow reconnects from the last event when the API restarts; a cancelled run exits 1", async () => {
    const { execution_id } = await sys.client.run("sleeper", { ms: 600_000 });
    await sys.client.executions.waitForResult(execution_id, { until: "blocked" });
    const topic = runTopic("sleeper", execution_id);
    let api = await sys.startApiProcess();
    const logs = start(sys, ["logs", execution_id, "--follow", "--api-url", api.url]);
    const shown = (text: string) => async () => (logs.run.stdout.includes(text) ? true : undefined);
    await sys.client.events.publish(topic, { n: "before" }, { eventType: "note" });
    await eventually(shown('[note] {"n":"before"}'), 30_000, "the event before the restart");

    await api.kill("SIGKILL");
    await sys.client.events.publish(topic, { n: "while down" }, { eventType: "note" });
    api = await sys.startApiProcess(api.port);
    await eventually(shown('[note] {"n":"while down"}'), 30_000, "the event published while it was down");
    await sys.client.events.publish(topic, { n: "after" }, { eventType: "note" });
    await eventually(shown('[note] {"n":"after"}'), 30_000, "the event after the restart");
    expect(logs.run.code).toBeNull();

    await sys.client.executions.cancel(execution_id);
    const r = await logs.exited;
    expect(r.code).toBe(1);
    // Announced once, though the stream opened twice.
    expect(r.stderr).toBe(
      `spool: following run ${execution_id} (Ctrl-C stops)\nspool: run ${execution_id} cancelled\n`,
    );
    // Each event once, in order: the reconnect resumed after the last one seen.
    expect(r.stdout).toBe(
      ['[note] {"n":"before"}', '[note] {"n":"while down"}', '[note] {"n":"after"}', ""].join("\n"),
    );
    await api.kill();
  }, 90_000);
  it("events tail shows each event once, through an API restart; Ctrl-C ends it with 0", async () => {
    const topic = `tail-${Date.now()}`;
    let api = await sys.startApiProcess();
    const tail = start(sys, ["events", "tail", topic, "--api-url", api.url]);
    const shown = (n: string) => async () => (tail.run.stdout.includes(`{"n":"${n}"}`) ? true : undefined);
    // Published until the tail shows one: it follows from when it connected.
    await eventually(
      async () => {
        await sys.client.events.publish(topic, { n: "first" });
        return shown("first")();
      },
      30_000,
      "the tail following",
    );
    await api.kill("SIGKILL");
    await sys.client.events.publish(topic, { n: "while down" });
    api = await sys.startApiProcess(api.port);
    await eventually(shown("while down"), 30_000, "the event published while the API was down");
    await sys.client.events.publish(topic, { n: "after" });
    await eventually(shown("after"), 30_000, "the event after the restart");

    tail.child.kill("SIGINT");
    const r = await tail.exited;
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines.filter((l) => l.includes('"while down"'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('"after"'))).toHaveLength(1);
    expect(lines.at(-1)).toContain('"after"');
    await api.kill();
  }, 90_000);
});

describe("the CLI's event-stream reader", () => {
  it("removes one space after a field's colon, no more (the SSE spec)", async () => {
    const body = [
      "data:  two spaces\n",
      "data:none\n",
      "data\n",
      "id:  7\n",
      "event: \tping \n\n",
      ": a comment\r\n",
      "data: crlf\r\n\r\n",
      "data: cr\r\rdata:\n\n",
    ].join("");
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const events = [];
      for await (const e of readSse(`http://127.0.0.1:${port}/`, {}, new AbortController().signal)) {
        events.push(e);
      }
      expect(events).toEqual([
        { id: " 7", event: "\tping ", data: " two spaces\nnone\n" },
        { id: " 7", event: undefined, data: "crlf" },
        { id: " 7", event: undefined, data: "cr" },
        { id: " 7", event: undefined, data: "" },
      ]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("spool logs --follow", () => {
  const env = useAgentSystem();

  it("prints an agent's text as it streams, then ends with the run", async () => {
    const words = ["Snow ", "over ", "Oslo ", "tonight, ", "minus ", "four."];
    // The model answers only once the CLI follows the stream: its words must arrive live.
    let following = () => {};
    const hold = new Promise<void>((resolve) => {
      following = resolve;
    });
    env.llm.script({ text: words.join(""), chunks: words, chunkDelayMs: 300, hold });
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "Oslo?" });
    const logs = start(env.sys, ["logs", execution_id, "--follow"]);
    await eventually(
      async () => (logs.run.stderr.includes(`following run ${execution_id}`) ? true : undefined),
      30_000,
      "the CLI following the stream",
    );
    following();
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
