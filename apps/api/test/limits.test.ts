// Per-key limits: a request rate (429 with Retry-After), event streams held open at once, and a
// revoked key's open streams ending.
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";
import { openSse } from "./sse-client.js";

const api = createTestApi({ limits: { ratePerSecond: 3, streamsPerKey: 1 } });

describe("per-key limits", () => {
  let p: { projectId: string; key: string };
  let url = "";
  let close = () => {};
  beforeAll(async () => {
    p = await api.createProject();
    const server = serve({ fetch: api.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    close = () => server.close();
  });
  afterAll(() => close());

  it("refuses a key past its requests per second with 429 and Retry-After; other keys and the admin key go on", async () => {
    const other = await api.createProject();
    const statuses: Response[] = [];
    for (let i = 0; i < 10; i++)
      statuses.push(await api.request("/api/v1/executions", { key: p.key, projectId: p.projectId }));
    const refused = statuses.filter((r) => r.status === 429);
    // A second may begin mid-way, admitting 3 more; 10 requests still meet the limit.
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(Number(refused[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    await expectError(refused[0]!, 429, "RATE_LIMITED");
    expect(
      (await api.request("/api/v1/executions", { key: other.key, projectId: other.projectId })).status,
    ).toBe(200);
    for (let i = 0; i < 10; i++) {
      expect(
        (await api.request("/api/v1/executions", { key: api.adminKey, projectId: p.projectId })).status,
      ).toBe(200);
    }
  });

  it("caps a key's open event streams, frees the slot when one closes, and ends a revoked key's stream", async () => {
    const created = await api.request(`/api/v1/projects/${p.projectId}/api-keys`, {
      method: "POST",
      key: api.adminKey,
      json: { name: "streamer", scope: "client" },
    });
    const streamer = (await created.json()) as { id: string; key: string };
    const headers = { authorization: `Bearer ${streamer.key}`, "x-project-id": p.projectId };
    const first = await openSse(`${url}/api/v1/events/stream?topic=a`, headers);
    expect(first.status).toBe(200);
    const second = await fetch(`${url}/api/v1/events/stream?topic=b`, { headers });
    await expectError(second, 429, "RATE_LIMITED");
    await first.close();
    // The slot is free again once the server has seen the first one go.
    let third: Awaited<ReturnType<typeof openSse>> | undefined;
    for (let i = 0; i < 100 && !third; i++) {
      const attempt = await openSse(`${url}/api/v1/events/stream?topic=b`, headers);
      if (attempt.status === 200) third = attempt;
      else {
        await attempt.close();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    expect(third?.status).toBe(200);

    // Revoked: the open stream ends by itself (within a second or so), with no request of the client.
    const revoked = await api.request(`/api/v1/projects/${p.projectId}/api-keys/${streamer.id}`, {
      method: "DELETE",
      key: api.adminKey,
    });
    expect(revoked.status).toBe(204);
    await expect(third!.ended).resolves.toBeUndefined();
  });
});

describe("long polls per key", () => {
  const polls = createTestApi({ limits: { longPollsPerKey: 1 } });

  it("a key holds at most its long polls; one whose client left frees its slot at once", async () => {
    const p = await polls.createProject();
    const call = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      polls.request(path, { ...init, key: p.key, projectId: p.projectId });
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
    await call("/api/v1/workers/deployments/v1/workflows", {
      method: "POST",
      json: { workflows: [{ workflow_id: "wf" }] },
    });
    // No worker serves it: the run stays queued, so a wait on it lasts its whole 60 s.
    const { execution_id } = (await (
      await call("/api/v1/workflows/wf/run", { method: "POST", json: { input: {} } })
    ).json()) as {
      execution_id: string;
    };
    const client = new AbortController();
    const first = call(`/api/v1/executions/${execution_id}?wait=60`, { signal: client.signal }).catch(
      () => null,
    );
    // Once its slot is held, another wait of the key is refused (a short one, so a probe that wins
    // the slot first gives it back), and a plain read is not.
    await expect
      .poll(async () => (await call(`/api/v1/executions/${execution_id}?wait=0.1`)).status, {
        timeout: 10_000,
      })
      .toBe(429);
    expect((await call(`/api/v1/executions/${execution_id}`)).status).toBe(200);
    client.abort();
    await first;
    // The first wait stopped when its client left: the key may wait again (answered at once: wait=0).
    await expect
      .poll(async () => (await call(`/api/v1/executions/${execution_id}?wait=0.1`)).status, {
        timeout: 10_000,
      })
      .toBe(202);
  });
});
