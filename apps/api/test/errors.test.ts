import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { createTestApi, expectError } from "./harness.js";
import {
  BODY_CASES,
  FORGED_TIME_CURSORS,
  ID_KEYED_LISTS,
  ID_ONLY_BODIES,
  NUL,
  NUL_ID_CURSOR,
  OFFSET_DATES,
  withValue,
  YEAR_0,
} from "./hostile-values.js";

const api = createTestApi({ maxBodyBytes: 4096 });

interface OpenApiParam {
  name: string;
  in: string;
  schema?: { type?: string; format?: string; pattern?: string; enum?: unknown[] };
}
interface OpenApiDoc {
  paths: Record<string, Record<string, { requestBody?: unknown; parameters?: OpenApiParam[] }>>;
}

describe("error contract", () => {
  let p: { projectId: string; key: string };
  beforeAll(async () => {
    p = await api.createProject();
  });
  const raw = (path: string, body: string, contentType?: string) =>
    api.request(path, {
      method: "POST",
      key: p.key,
      projectId: p.projectId,
      body,
      headers: contentType ? { "content-type": contentType } : {},
    });

  it("malformed JSON is 400, a non-JSON body 415, an oversize body 413; nothing is written", async () => {
    const before = await api.engine.prisma.deployment.count({ where: { projectId: p.projectId } });
    await expectError(
      await raw("/api/v1/workers/deployments", '{"deployment_id":', "application/json"),
      400,
      "BAD_REQUEST",
    );
    await expectError(
      await raw("/api/v1/workers/deployments", "deployment_id=x", "text/plain"),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    );
    await expectError(await raw("/api/v1/workers/deployments", "{}"), 415, "UNSUPPORTED_MEDIA_TYPE");
    const big = JSON.stringify({ deployment_id: "x", pad: "y".repeat(10_000) });
    await expectError(
      await raw("/api/v1/workers/deployments", big, "application/json"),
      413,
      "PAYLOAD_TOO_LARGE",
    );
    expect(await api.engine.prisma.deployment.count({ where: { projectId: p.projectId } })).toBe(before);
  });

  it("over HTTP, a body past the limit is 413 whether it declares its length or comes chunked", async () => {
    const server = serve({ fetch: api.fetch, port: 0, hostname: "127.0.0.1" });
    onTestFinished(() => {
      server.close();
    });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    const { port } = server.address() as AddressInfo;
    const post = (body: string, chunked: boolean) =>
      new Promise<{ status: number; body: { error_type?: string } }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/api/v1/workers/deployments",
            headers: {
              authorization: `Bearer ${p.key}`,
              "x-project-id": p.projectId,
              "content-type": "application/json",
              ...(chunked
                ? { "transfer-encoding": "chunked" }
                : { "content-length": Buffer.byteLength(body) }),
            },
          },
          (res) => {
            let text = "";
            res.on("data", (d: Buffer) => {
              text += d;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        req.on("error", reject);
        // Chunked: sent in pieces, so the limit is met while the body streams in.
        if (chunked) for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000));
        else req.write(body);
        req.end();
      });
    const before = await api.engine.prisma.deployment.count({ where: { projectId: p.projectId } });
    const big = JSON.stringify({ deployment_id: `big-${randomUUID()}`, pad: "y".repeat(10_000) });
    for (const chunked of [false, true]) {
      const res = await post(big, chunked);
      expect(res, `chunked: ${chunked}`).toMatchObject({
        status: 413,
        body: { error_type: "PAYLOAD_TOO_LARGE" },
      });
    }
    expect(await api.engine.prisma.deployment.count({ where: { projectId: p.projectId } })).toBe(before);
    // Under the limit, both ways are accepted.
    for (const chunked of [false, true]) {
      const res = await post(JSON.stringify({ deployment_id: `small-${randomUUID()}` }), chunked);
      expect(res.status, `chunked: ${chunked}`).toBeLessThan(300);
    }
    expect(await api.engine.prisma.deployment.count({ where: { projectId: p.projectId } })).toBe(before + 2);
  });

  it("unknown routes are a JSON 404", async () => {
    await expectError(
      await api.request("/api/v1/nothing-here", { key: p.key, projectId: p.projectId }),
      404,
      "NOT_FOUND",
    );
    await expectError(await api.request("/api/nope"), 404, "NOT_FOUND");
  });

  it("no route answers 500 to hostile input", async () => {
    const doc = (await (await api.request("/api/v1/openapi.json")).json()) as OpenApiDoc;
    const hostileBodies = [
      "null",
      "[]",
      '"str"',
      "123",
      '{"__proto__":{"x":1}}',
      JSON.stringify({ name: { $gt: "" }, deployment_id: ["a"], workflows: "x", id: null, mode: 1 }),
      JSON.stringify({ deployment_id: "a".repeat(300), queues: [{ name: "\u0000" }], limit: -1 }),
      '{"a":"\\ud800"}',
    ];
    const hostileSegments = [
      "%00",
      "..%2F..",
      "a".repeat(300),
      "00000000-0000-0000-0000-000000000000",
      "%F0%9F%92%A9",
    ];
    let requests = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods)) {
        const paths = path.includes("{")
          ? hostileSegments.map((s) => path.replace(/\{[^}]+\}/g, s))
          : [`${path}?limit=abc&cursor=%%%&status=bogus&deployment_id=`];
        for (const concrete of paths) {
          const bodies = method === "get" || method === "delete" ? [undefined] : hostileBodies;
          for (const body of bodies) {
            for (const key of [p.key, api.adminKey]) {
              const res = await api.request(concrete, {
                method: method.toUpperCase(),
                key,
                projectId: p.projectId,
                ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } }),
              });
              requests++;
              expect(res.status, `${method} ${concrete} ${body}: ${await res.clone().text()}`).toBeLessThan(
                500,
              );
              if (res.status >= 400) {
                const err = (await res.json()) as { error_type?: string };
                expect(typeof err.error_type).toBe("string");
              }
            }
          }
        }
      }
    }
    expect(requests).toBeGreaterThan(200);
  });

  describe("hostile values in well-shaped input", () => {
    const ids: Record<string, string> = {
      deployment_id: "d1",
      workflow_id: "wf",
      agent_id: "ag",
      tool_id: "t1",
      execution_id: randomUUID(),
      key_id: randomUUID(),
      trigger_id: randomUUID(),
      trace_id: "0b6f5c9e6d1c4f5e9d6b2f0d1e6a7c11",
      session_id: "sess-1",
      step_key: "s",
    };
    /** Query params a route needs before it looks at the hostile one. */
    const BASE_QUERY: Record<string, Record<string, string>> = {
      "/api/v1/events": { topic: "t" },
      "/api/v1/events/stream": { topic: "t" },
      "/api/v1/workers/status": { deployment_id: "d1" },
    };
    const call = (method: string, path: string, body?: unknown, admin = false) =>
      api.request(path, {
        method,
        key: admin ? api.adminKey : p.key,
        projectId: p.projectId,
        ...(body === undefined ? {} : { json: body }),
      });
    const concrete = (path: string) =>
      path.replace(/\{([^}]+)\}/g, (_, name: string) => {
        const id = ids[name];
        if (!id) throw new Error(`no fixture id for {${name}}`);
        return encodeURIComponent(id);
      });

    /** Undefined when the answer is a 400 INVALID_INPUT naming `field`; else what came instead. */
    async function problemOf(res: Response, field: string): Promise<string | undefined> {
      if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
        await res.body?.cancel();
        return `${res.status} event stream`;
      }
      const text = await res.text();
      const body = JSON.parse(text) as { error_type?: string; details?: { path?: string }[] };
      const named = (body.details ?? []).some((d) => d.path === field || d.path?.startsWith(`${field}.`));
      return res.status === 400 && body.error_type === "INVALID_INPUT" && named
        ? undefined
        : `${res.status} ${text}`;
    }

    beforeAll(async () => {
      ids.project_id = p.projectId;
      await call("POST", "/api/v1/workers/deployments", { deployment_id: "d1" });
      await call("POST", "/api/v1/workers/deployments/d1/workflows", { workflow_id: "wf" });
      const worker = await call("POST", "/api/v1/workers/register", { deployment_id: "d1", mode: "queue" });
      ids.worker_id = ((await worker.json()) as { worker_id: string }).worker_id;
      const schedule = await call("POST", "/api/v1/schedules", { workflow_id: "wf", cron: "0 9 * * *" });
      ids.schedule_id = ((await schedule.json()) as { schedule_id: string }).schedule_id;
    });

    it("every body route refuses NUL, bad Unicode, deep JSON, 32-bit overflow and year 0 (400, field named)", async () => {
      const doc = (await (await api.request("/api/v1/openapi.json")).json()) as OpenApiDoc;
      const bodyRoutes = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody)
          .map(([method]) => `${method.toUpperCase()} ${path}`),
      );
      const covered = new Set([...BODY_CASES.map((c) => c.route), ...ID_ONLY_BODIES]);
      expect(bodyRoutes.filter((r) => !covered.has(r))).toEqual([]);

      const failures: string[] = [];
      for (const { route, admin, base, hostile } of BODY_CASES) {
        const [method = "", path = ""] = route.split(" ");
        for (const [field, values] of Object.entries(hostile)) {
          for (const { value, at } of values) {
            const res = await call(method, concrete(path), withValue(base, field, value), admin);
            const problem = await problemOf(res, at ? `${field}.${at}` : field);
            if (problem) failures.push(`${route} ${field}=${JSON.stringify(value).slice(0, 60)}: ${problem}`);
          }
        }
      }
      expect(failures).toEqual([]);
    });

    it("every query refuses NUL text, dates outside years 1-9999 and forged cursors (400, param named)", async () => {
      const doc = (await (await api.request("/api/v1/openapi.json")).json()) as OpenApiDoc;
      const hostileValues = (path: string, { name, schema = {} }: OpenApiParam): string[] => {
        if (name === "cursor") {
          return ID_KEYED_LISTS.includes(path) ? [NUL_ID_CURSOR] : [...FORGED_TIME_CURSORS, NUL_ID_CURSOR];
        }
        if (schema.format === "date-time") return [YEAR_0, ...OFFSET_DATES];
        const freeText = schema.type === "string" && !schema.pattern && !schema.enum && !schema.format;
        return freeText ? [NUL] : [];
      };
      const failures: string[] = [];
      const swept: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const param of ops.get?.parameters?.filter((q) => q.in === "query") ?? []) {
          const values = hostileValues(path, param);
          if (values.length > 0) swept.push(`${path} ${param.name}`);
          for (const value of values) {
            const query = new URLSearchParams({ ...BASE_QUERY[path], [param.name]: value });
            // Keys are listed by the admin key (or an admin-scoped key) only.
            const res = await call(
              "GET",
              `${concrete(path)}?${query}`,
              undefined,
              path.includes("/api-keys"),
            );
            const problem = await problemOf(res, param.name);
            if (problem) failures.push(`GET ${path} ${param.name}=${JSON.stringify(value)}: ${problem}`);
          }
        }
      }
      expect(swept).toEqual(
        expect.arrayContaining([
          "/api/v1/executions created_after",
          "/api/v1/executions created_before",
          "/api/v1/executions cursor",
          "/api/v1/traces start_time",
          "/api/v1/traces end_time",
          "/api/v1/traces root_span_name",
          "/api/v1/traces cursor",
          "/api/v1/events topic",
          "/api/v1/events/stream topic",
          "/api/v1/deployments cursor",
          "/api/v1/projects/{project_id}/api-keys cursor",
        ]),
      );
      expect(failures).toEqual([]);
    });
  });
});
