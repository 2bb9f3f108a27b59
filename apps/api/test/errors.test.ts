import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi({ maxBodyBytes: 4096 });

interface OpenApiDoc {
  paths: Record<string, Record<string, { requestBody?: unknown }>>;
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
    const before = await api.engine.prisma.deployment.count();
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
    expect(await api.engine.prisma.deployment.count()).toBe(before);
  });

  it("unknown routes are a JSON 404", async () => {
    await expectError(
      await api.request("/api/v1/nothing-here", { key: p.key, projectId: p.projectId }),
      404,
      "NOT_FOUND",
    );
    await expectError(await api.request("/nope"), 404, "NOT_FOUND");
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
});
