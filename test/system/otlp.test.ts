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

describe("OTLP export (real worker process)", () => {
  let sys: System;
  let collector: Awaited<ReturnType<typeof startCollector>>;

  beforeAll(async () => {
    collector = await startCollector();
    sys = await startSystem({ workerEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } });
    await sys.startWorker();
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
});
