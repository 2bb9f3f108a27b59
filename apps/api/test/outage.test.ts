// Postgres or Redis away: the API answers 503 SERVICE_UNAVAILABLE with Retry-After (not a 500),
// logs it once at warn without a stack, keeps accepting runs when only Redis is away, and logs a
// client that leaves at debug. Real Postgres and Redis throughout: an outage is a closed port or a
// cut TCP proxy in front of the test database.
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { OpenAPIHono } from "@hono/zod-openapi";
import { generateApiKey } from "@spool/engine";
import pg from "pg";
import { pino } from "pino";
import { afterAll, describe, expect, inject, it, onTestFinished, vi } from "vitest";
import type { ApiEnv } from "../src/context.js";
import { onError } from "../src/errors.js";
import { createTestApi, expectError, type TestApi } from "./harness.js";
import { startTcpProxy } from "./tcp-proxy.js";

interface LogLine {
  level: number;
  msg: string;
  err?: unknown;
  path?: string;
  [field: string]: unknown;
}
const WARN = 40;
const ERROR = 50;

/** A real pino logger at debug whose lines the test can read. */
function captureLogs() {
  const lines: LogLine[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines, take: () => lines.splice(0) };
}

/** Asserts the outage answer: 503, the contract's body, Retry-After, and no driver detail. */
async function expectUnavailable(res: Response) {
  expect(res.headers.get("content-type")).toContain("application/json");
  expect(res.headers.get("retry-after")).toBe("2");
  const body = await expectError(res, 503, "SERVICE_UNAVAILABLE");
  expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|P1001|prisma/i);
  return body;
}

/** The request's log lines at warn and above: exactly one warning, its message, no stack. */
function expectOneBriefWarning(lines: LogLine[], path: string, message: RegExp) {
  const loud = lines.filter((l) => l.level >= WARN);
  expect(loud.map((l) => ({ level: l.level, msg: l.msg, path: l.path }))).toEqual([
    { level: WARN, msg: "dependency unavailable", path },
  ]);
  expect(loud[0]!.err).toMatch(message);
  expect(JSON.stringify(loud[0])).not.toMatch(/stack|\\n\s+at /);
}

describe("Postgres unreachable (nothing listens on its port)", () => {
  const logs = captureLogs();
  const down = createTestApi({ databaseUrl: "postgresql://postgres@127.0.0.1:1/spool", logger: logs.logger });

  it("a project-scoped read and a run answer 503 with Retry-After, logged once at warn", async () => {
    const projectId = randomUUID();
    logs.take();
    await expectUnavailable(await down.request("/api/v1/executions", { key: down.adminKey, projectId }));
    expectOneBriefWarning(logs.take(), "/api/v1/executions", /Can't reach database server/);

    const run = await down.request("/api/v1/workflows/wf/run", {
      method: "POST",
      key: down.adminKey,
      projectId,
      json: { input: {} },
    });
    await expectUnavailable(run);
    expectOneBriefWarning(logs.take(), "/api/v1/workflows/wf/run", /Can't reach database server/);
  });

  it("a project key that is not cached cannot be checked: 503, not 401 or 500", async () => {
    logs.take();
    const res = await down.request("/api/v1/executions", { key: generateApiKey(), projectId: randomUUID() });
    await expectUnavailable(res);
    expectOneBriefWarning(logs.take(), "/api/v1/executions", /Can't reach database server/);
  });
});

// Postgres behind a proxy the tests cut and restore (top level: describe bodies cannot await).
const proxy = await startTcpProxy(inject("databaseUrl"));
afterAll(() => proxy.close());

describe("Postgres going away under a running API", () => {
  const logs = captureLogs();
  const api = createTestApi({ databaseUrl: proxy.url, logger: logs.logger });

  it("answers 503 while the connection is cut and 200 again once it is back", async () => {
    const p = await api.createProject();
    const list = () => api.request("/api/v1/executions", { key: p.key, projectId: p.projectId });
    expect((await list()).status).toBe(200);

    await proxy.cut();
    onTestFinished(() => proxy.restore());
    logs.take();
    // The pool's connection was reset and the port is closed: whichever the query meets, a 503.
    await expectUnavailable(await list());
    expectOneBriefWarning(
      logs.take(),
      "/api/v1/executions",
      /Can't reach database server|Server has closed the connection|Connection terminated/,
    );

    await proxy.restore();
    expect((await list()).status).toBe(200);
  });

  it("an event stream that loses Postgres ends with an SSE retry delay, logged at warn, not printed", async () => {
    const p = await api.createProject();
    const consoleError = vi.spyOn(console, "error");
    onTestFinished(() => consoleError.mockRestore());
    // The stream only starts (200) while the key is still cached; once its cache entry has expired the
    // key check itself meets the outage and answers 503. Retried until a stream started.
    let stream: Response | undefined;
    for (let attempt = 0; attempt < 5 && !stream; attempt++) {
      await proxy.restore();
      expect((await api.request("/api/v1/executions", { key: p.key, projectId: p.projectId })).status).toBe(
        200,
      );
      await proxy.cut();
      logs.take();
      const res = await api.request(`/api/v1/events/stream?topic=outage-${attempt}&last_sequence_id=0`, {
        key: p.key,
        projectId: p.projectId,
      });
      if (res.status === 200) stream = res;
      else await expectUnavailable(res);
    }
    await proxy.restore();
    expect(stream?.headers.get("content-type")).toContain("text/event-stream");
    // The stream ends by itself (its body completes) and tells an EventSource to wait Retry-After.
    expect(await stream!.text()).toBe("retry: 2000\n\n");
    const loud = logs.take().filter((l) => l.level >= WARN);
    expect(loud.map((l) => ({ level: l.level, msg: l.msg, path: l.path }))).toEqual([
      { level: WARN, msg: "dependency unavailable", path: "/api/v1/events/stream" },
    ]);
    expect(JSON.stringify(loud)).not.toMatch(/stack|\\n\s+at /);
    expect(consoleError).not.toHaveBeenCalled();
  });
});

describe("Redis unreachable", () => {
  const logs = captureLogs();
  const api = createTestApi({ redisUrl: "redis://127.0.0.1:1", logger: logs.logger });

  it("a run is still accepted (202) and stays queued in Postgres for the sweep; nothing logged as an error", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
      api.request(path, { ...init, key: p.key, projectId: p.projectId });
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
    await call("/api/v1/workers/deployments/v1/workflows", {
      method: "POST",
      json: { workflows: [{ workflow_id: "wf" }] },
    });
    logs.take();
    const res = await call("/api/v1/workflows/wf/run", { method: "POST", json: { input: { n: 1 } } });
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { execution_id: string; status: string };
    expect(receipt.status).toBe("queued");
    const got = (await (await call(`/api/v1/executions/${receipt.execution_id}`)).json()) as {
      status: string;
    };
    expect(got.status).toBe("queued");
    const lines = logs.take();
    expect(lines.filter((l) => l.level >= ERROR)).toEqual([]);
    expect(lines.filter((l) => l.level === WARN).map((l) => l.msg)).toContain(
      "enqueue failed; the sweep will retry",
    );
  });

  it("a queue with a limit is registered: the limit lives in Postgres, nothing waits for Redis", async () => {
    const p = await api.createProject();
    const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
      api.request(path, { ...init, key: p.key, projectId: p.projectId });
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
    logs.take();
    const res = await call("/api/v1/workers/queues", {
      method: "POST",
      json: { deployment_id: "v1", queues: [{ name: "slow-lane", concurrency_limit: 2 }] },
    });
    expect(res.status).toBeLessThan(300);
    const row = await api.engine.prisma.queue.findFirst({
      where: { projectId: p.projectId, name: "slow-lane" },
    });
    expect(row?.concurrencyLimit).toBe(2);
    expect(logs.take().filter((l) => l.level >= ERROR)).toEqual([]);
  });
});

describe("a client that leaves", () => {
  const logs = captureLogs();
  const api: TestApi = createTestApi({ logger: logs.logger });

  it("mid-body is logged at debug, not as an unhandled error", async () => {
    const p = await api.createProject();
    const server = serve({ fetch: api.fetch, port: 0, hostname: "127.0.0.1" });
    onTestFinished(() => {
      server.close();
    });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    const { port } = server.address() as AddressInfo;
    logs.take();
    // A chunked body that never ends: the app is reading it when the client goes away.
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/v1/events/publish",
      headers: {
        authorization: `Bearer ${p.key}`,
        "x-project-id": p.projectId,
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      },
    });
    req.on("error", () => {});
    req.write('{"topic":"t","data":', () => req.destroy());
    await vi.waitFor(() => expect(logs.lines.map((l) => l.msg)).toContain("client closed the request"), {
      timeout: 10_000,
    });
    const line = logs.lines.find((l) => l.msg === "client closed the request")!;
    expect(line).toMatchObject({ level: 20, path: "/api/v1/events/publish", err: "ECONNRESET: aborted" });
    expect(logs.lines.filter((l) => l.level >= WARN)).toEqual([]);
  });
});

describe("onError keeps genuine bugs loud", () => {
  const logs = captureLogs();
  const app = new OpenAPIHono<ApiEnv>();
  app.use("*", async (c, next) => {
    c.set("logger", logs.logger);
    await next();
  });
  const pool = new pg.Pool({ connectionString: inject("databaseUrl"), max: 1 });
  const refused = new pg.Pool({ connectionString: "postgresql://postgres@127.0.0.1:1/spool" });
  afterAll(() => Promise.all([pool.end(), refused.end()]));
  // Real errors from real code: a TypeError, a query with a wrong parameter count (SQLSTATE 08P01,
  // which shares the connection-exception class), a refused connection.
  app.get("/bug", () => (JSON.parse("null") as { a: { b: Response } }).a.b);
  app.get("/bad-query", async () => {
    await pool.query("select $1::int + $2::int", [1]);
    return new Response();
  });
  app.get("/refused", async () => {
    await refused.query("select 1");
    return new Response();
  });
  app.onError(onError);

  it("answers a bug 500 INTERNAL_ERROR, logged at error with its stack", async () => {
    for (const path of ["/bug", "/bad-query"]) {
      logs.take();
      const res = await app.request(path);
      await expectError(res, 500, "INTERNAL_ERROR");
      expect(res.headers.get("retry-after")).toBeNull();
      const [line, ...rest] = logs.take();
      expect(rest).toEqual([]);
      expect(line).toMatchObject({ level: ERROR, msg: "unhandled error", path });
      expect((line!.err as { stack: string }).stack).toMatch(/\n\s+at /);
    }
  });

  it("answers a refused connection 503", async () => {
    logs.take();
    await expectUnavailable(await app.request("/refused"));
    expectOneBriefWarning(logs.take(), "/refused", /ECONNREFUSED/);
  });
});

describe("OpenAPI document", () => {
  const api = createTestApi();

  it("documents 503 with Retry-After on every authenticated operation", async () => {
    const doc = (await (await api.request("/api/v1/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            security?: unknown[];
            responses: Record<string, { description: string; headers?: Record<string, unknown> }>;
          }
        >
      >;
    };
    const missing: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.security?.length === 0) continue; // public (health): its own 503 body
        const unavailable = op.responses["503"];
        if (!unavailable?.headers?.["Retry-After"] || !/Retry-After/.test(unavailable.description)) {
          missing.push(`${method.toUpperCase()} ${path}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
