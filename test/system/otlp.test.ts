import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type System, startSystem } from "./harness.js";

interface ExportedSpan {
  name: string;
  traceId: string;
}

/** A stand-in OTLP/HTTP collector: keeps the spans of every export request. */
async function startCollector() {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const parsed = JSON.parse(body) as {
        resourceSpans: { scopeSpans: { spans: ExportedSpan[] }[] }[];
      };
      for (const r of parsed.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((r) => server.close(r)) };
}

describe("OTLP export (real worker and scheduler processes)", () => {
  let sys: System;
  let collector: Awaited<ReturnType<typeof startCollector>>;

  beforeAll(async () => {
    collector = await startCollector();
    // Own database: another test file's scheduler would time the run out first, and not export it.
    sys = await startSystem({ ownDatabase: true, workerEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } });
    await sys.startWorker();
    await sys.startScheduler({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  });
  afterAll(async () => {
    await sys?.stop();
    await collector?.close();
  });

  it("with OTEL_EXPORTER_OTLP_ENDPOINT set, a run's execution and step spans reach the collector", async () => {
    const { execution_id } = await sys.client.run("three-steps", { n: 1 });
    await sys.client.executions.waitForResult(execution_id);
    const traceId = execution_id.replaceAll("-", "");
    const names = await eventually(async () => {
      const mine = collector.spans.filter((s) => s.traceId === traceId).map((s) => s.name);
      return mine.length >= 4 ? mine : undefined;
    }, 10_000);
    expect(names.sort()).toEqual(["add-one", "describe", "double", "three-steps"]);
  });

  it("a run the scheduler ends (its run timeout, while suspended) is exported by the scheduler", async () => {
    const { execution_id } = await sys.client.run("approval", { amount: 1 }, { runTimeoutSeconds: 1 });
    const done = await sys.client.executions.waitForResult(execution_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: "failed", error: { name: "RunTimeoutError" } });
    // The worker parked the run unfinished, so it never exported the run's own span: only the
    // scheduler, which failed it, can have.
    const traceId = execution_id.replaceAll("-", "");
    const root = await eventually(
      async () => collector.spans.find((s) => s.traceId === traceId && s.name === "approval"),
      10_000,
    );
    expect(root).toBeDefined();
  });
});
