// The OTLP export against a local HTTP receiver: the real OpenTelemetry exporter, real requests.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Prisma } from "@spool/db";
import { createLogger } from "@spool/shared";
import { expect, it } from "vitest";
import { createOtlpSpanSink } from "./otlp-export.js";

it("exports finished spans as OTLP/HTTP JSON with ids, parent, times, attributes and error status", async () => {
  const bodies: unknown[] = [];
  const server = createServer((req, res) => {
    let data = "";
    req.on("data", (c) => {
      data += c;
    });
    req.on("end", () => {
      bodies.push({ path: req.url, body: JSON.parse(data) });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const sink = createOtlpSpanSink({
    serviceName: "spool-test",
    logger: createLogger("t", "silent"),
    url: `http://127.0.0.1:${port}/v1/traces`,
  });
  try {
    sink.export([
      {
        spanId: "00000000000000aa",
        traceId: "0000000000000000000000000000abcd",
        projectId: "00000000-0000-4000-8000-000000000000",
        parentSpanId: "00000000000000bb",
        name: "llm-1",
        spanType: "llm",
        attributes: { "llm.usage.input_tokens": 12, kind: "llm" },
        input: { messages: [] },
        output: Prisma.DbNull,
        error: { name: "Error", message: "rate limited" },
        startedAt: new Date("2026-01-01T00:00:00.000Z"),
        endedAt: new Date("2026-01-01T00:00:01.250Z"),
      },
    ]);
    await sink.shutdown();
    expect(bodies).toHaveLength(1);
    type Attr = { key: string; value: Record<string, unknown> };
    type OtlpSpan = Record<string, unknown> & {
      attributes: Attr[];
      startTimeUnixNano: string;
      endTimeUnixNano: string;
    };
    type Body = {
      resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
    };
    const { path, body } = bodies[0] as { path: string; body: Body };
    expect(path).toBe("/v1/traces");
    const span = body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(span).toMatchObject({
      traceId: "0000000000000000000000000000abcd",
      spanId: "00000000000000aa",
      parentSpanId: "00000000000000bb",
      name: "llm-1",
      status: { code: 2, message: "rate limited" },
    });
    expect(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)).toBe(1_250_000_000n);
    const attrs = Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attrs).toMatchObject({
      "llm.usage.input_tokens": 12,
      "spool.kind": "llm",
      "spool.span_type": "llm",
    });
    expect(attrs["spool.output"]).toBeUndefined();
    expect(body.resourceSpans[0]!.resource.attributes).toContainEqual({
      key: "service.name",
      value: { stringValue: "spool-test" },
    });
  } finally {
    server.close();
  }
});
