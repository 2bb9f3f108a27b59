import { serve } from "@hono/node-server";
import type { PublishedEvent } from "@spool/engine";
import { createLogger } from "@spool/shared";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished, vi } from "vitest";
import { createApp } from "../src/app.js";
import { createEventHub, EventHub } from "../src/streaming/event-hub.js";
import { createTestApi, expectError, type TestApi } from "./harness.js";
import { openSse } from "./sse-client.js";

const api = createTestApi();

describe("events", () => {
  let p: { projectId: string; key: string };
  const call = (
    path: string,
    init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
  ) => api.request(path, { ...init, key: p.key, projectId: p.projectId });
  beforeAll(async () => {
    p = await api.createProject();
  });

  it("publishes one or several events with increasing per-project sequence ids", async () => {
    const one = await call("/api/v1/events/publish", {
      method: "POST",
      json: { topic: "orders", data: { n: 1 } },
    });
    expect(one.status).toBe(201);
    const a = (await one.json()) as {
      events: { sequence_id: number; topic: string; data: unknown }[];
      sequence_ids: number[];
    };
    expect(a.events[0]).toMatchObject({ topic: "orders", data: { n: 1 }, event_type: null });
    const many = await call("/api/v1/events/publish", {
      method: "POST",
      json: {
        topic: "payments",
        event_type: "paid",
        events: [{ data: { n: 2 } }, { event_type: "refund", data: { n: 3 } }],
      },
    });
    const b = (await many.json()) as {
      events: { sequence_id: number; event_type: string }[];
      sequence_ids: number[];
    };
    expect(b.sequence_ids).toEqual([a.sequence_ids[0]! + 1, a.sequence_ids[0]! + 2]);
    expect(b.events.map((e) => e.event_type)).toEqual(["paid", "refund"]);
  });

  it("history pages a topic oldest first", async () => {
    for (let i = 0; i < 5; i++)
      await call("/api/v1/events/publish", { method: "POST", json: { topic: "paged", data: { i } } });
    const first = (await (await call("/api/v1/events?topic=paged&limit=3")).json()) as {
      events: { data: { i: number } }[];
      next_sequence_id: number;
      has_more: boolean;
    };
    expect(first.events.map((e) => e.data.i)).toEqual([0, 1, 2]);
    expect(first.has_more).toBe(true);
    const rest = (await (
      await call(`/api/v1/events?topic=paged&after_sequence_id=${first.next_sequence_id}`)
    ).json()) as {
      events: { data: { i: number } }[];
      has_more: boolean;
    };
    expect(rest.events.map((e) => e.data.i)).toEqual([3, 4]);
    expect(rest.has_more).toBe(false);
  });

  it("rejects bad bodies without writing; repeats an idempotent publish", async () => {
    const before = await api.engine.prisma.event.count({ where: { projectId: p.projectId } });
    for (const json of [
      { topic: "t" },
      { topic: "t", data: {}, events: [{ data: {} }] },
      { topic: "", data: {} },
      { topic: "t", data: [1] },
      { topic: "t", events: [] },
    ]) {
      await expectError(await call("/api/v1/events/publish", { method: "POST", json }), 400, "INVALID_INPUT");
    }
    await expectError(await call("/api/v1/events"), 400, "INVALID_INPUT");
    const headers = { "idempotency-key": "pub-1" };
    const first = await call("/api/v1/events/publish", {
      method: "POST",
      json: { topic: "idem", data: { x: 1 } },
      headers,
    });
    const again = await call("/api/v1/events/publish", {
      method: "POST",
      json: { topic: "idem", data: { x: 1 } },
      headers,
    });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(await first.json());
    expect(await api.engine.prisma.event.count({ where: { projectId: p.projectId } })).toBe(before + 1);
  });

  it("another project sees none of a project's events", async () => {
    const other = await api.createProject();
    const res = await api.request("/api/v1/events?topic=orders", {
      key: other.key,
      projectId: other.projectId,
    });
    expect(await res.json()).toEqual({ events: [], next_sequence_id: 0, has_more: false });
  });
});

describe("SSE stream across two API replicas", () => {
  let replicas: { api: TestApi; url: string; close: () => void }[];
  let p: { projectId: string; key: string };

  beforeAll(async () => {
    replicas = await Promise.all(
      [api, createTestApi({ sseKeepaliveMs: 200 })].map(async (replica) => {
        const server = serve({ fetch: replica.fetch, port: 0, hostname: "127.0.0.1" });
        await new Promise<void>((resolve) => server.once("listening", resolve));
        const { port } = server.address() as { port: number };
        return { api: replica, url: `http://127.0.0.1:${port}`, close: () => server.close() };
      }),
    );
    p = await api.createProject();
  });
  afterAll(() => {
    for (const r of replicas) r.close();
  });

  const publish = (replica: number, topic: string, i: number) =>
    fetch(`${replicas[replica]!.url}/api/v1/events/publish`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${p.key}`,
        "x-project-id": p.projectId,
        "content-type": "application/json",
      },
      body: JSON.stringify({ topic, data: { i } }),
    });
  const auth = () => ({ authorization: `Bearer ${p.key}`, "x-project-id": p.projectId });

  it("a client that reconnects with Last-Event-ID gets every event published meanwhile, exactly once", async () => {
    const url = `${replicas[1]!.url}/api/v1/events/stream?topic=live`;
    const first = await openSse(url, auth());
    expect(first.status).toBe(200);
    expect(first.contentType).toContain("text/event-stream");
    // Keep-alives start once the stream is subscribed: the events below then come over the live feed.
    await first.waitForComments(1);
    for (let i = 0; i < 5; i++) await publish(0, "live", i); // published through the other replica
    const got = await first.waitFor(5);
    const lastId = got.at(-1)!.id!;
    await first.close();

    for (let i = 5; i < 12; i++) await publish(i % 2, "live", i); // while disconnected, both replicas
    await publish(0, "other-topic", 99);

    const second = await openSse(url, { ...auth(), "last-event-id": lastId });
    await second.waitFor(7);
    for (let i = 12; i < 15; i++) await publish(0, "live", i);
    // A sentinel published last: events go out in sequence order, so anything extra (a repeat, the
    // other topic's event) would reach the stream before it.
    await publish(0, "live", 15);
    const all = await second.waitFor(11);
    await second.waitForComments(1); // keep-alive comments (every 200 ms here)
    await second.close();

    const seen = [...got, ...all].map((e) => (JSON.parse(e.data) as { data: { i: number } }).data.i);
    expect(seen).toEqual(Array.from({ length: 16 }, (_, i) => i));
    const ids = [...got, ...all].map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("a run's stream starts at its beginning; bad queries are 400 and other keys 401", async () => {
    const runId = "00000000-0000-4000-8000-000000000001";
    await publish(0, `workflow/agent-x/${runId}`, 1);
    const s = await openSse(
      `${replicas[0]!.url}/api/v1/events/stream?workflow_id=agent-x&workflow_run_id=${runId}`,
      auth(),
    );
    await s.waitFor(1);
    await s.close();
    const bad = await fetch(`${replicas[0]!.url}/api/v1/events/stream?workflow_id=agent-x`, {
      headers: auth(),
    });
    await expectError(bad, 400, "INVALID_INPUT");
    const anon = await fetch(`${replicas[0]!.url}/api/v1/events/stream?topic=x`);
    await expectError(anon, 401, "UNAUTHORIZED");
  });

  it("a Last-Event-ID that is not a sequence id is 400, not a stream that fails", async () => {
    for (const lastEventId of ["abc", "-1", "1.5", "1e3", "99999999999999999999"]) {
      const res = await fetch(`${replicas[0]!.url}/api/v1/events/stream?topic=x`, {
        headers: { ...auth(), "last-event-id": lastEventId },
      });
      const body = await expectError(res, 400, "INVALID_INPUT");
      expect(body.error).toContain("Last-Event-ID");
    }
  });
});

describe("SSE stream lifecycle", () => {
  it("idle streams on 50 topics of a project cost one query per safety poll; a lost announcement still arrives", async () => {
    // A subscriber that never connects: every announcement is lost, only the safety poll delivers.
    const deaf = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    deaf.on("error", () => {});
    const hub = new EventHub(api.engine, deaf, createLogger("api-test", "silent"), 100);
    onTestFinished(() => hub.close());
    const p = await api.createProject();
    const received: PublishedEvent[] = [];
    for (let i = 0; i < 50; i++) await hub.subscribe(p.projectId, `idle-${i}`, (e) => received.push(...e));
    // Spies that call through: counting what this project's feeds ask Postgres.
    const polls = vi.spyOn(api.engine.events, "latestSequences");
    const reads = vi.spyOn(api.engine.events, "history");
    onTestFinished(() => {
      vi.restoreAllMocks();
    });
    const ofProject = (calls: unknown[][]) => calls.filter(([projectId]) => projectId === p.projectId);

    await vi.waitFor(() => expect(ofProject(polls.mock.calls).length).toBeGreaterThanOrEqual(5), {
      timeout: 10_000,
    });
    // One query per poll for all 50 topics; nothing read for topics that have nothing new.
    expect(ofProject(polls.mock.calls).every(([, topics]) => (topics as string[]).length === 50)).toBe(true);
    expect(ofProject(reads.mock.calls)).toEqual([]);

    await api.engine.events.publish(p.projectId, "idle-7", [{ data: { n: 1 } }]);
    await vi.waitFor(() => expect(received.map((e) => e.topic)).toEqual(["idle-7"]), { timeout: 10_000 });
    expect(ofProject(reads.mock.calls).map(([, topic]) => topic)).toEqual(["idle-7"]);
  });

  it("streams closed while still starting leave no listener behind", async () => {
    // An app of its own, so this hub serves only the streams below.
    const logger = createLogger("api-test", "silent");
    const hub = createEventHub(api.engine, inject("redisUrl"), logger);
    const app = createApp({ engine: api.engine, eventHub: hub, logger });
    onTestFinished(() => hub.close());
    const p = await api.createProject();
    let subscribed = 0;
    const subscribe = hub.subscribe.bind(hub);
    vi.spyOn(hub, "subscribe").mockImplementation(async (...args) => {
      const unsubscribe = await subscribe(...args);
      subscribed++;
      return unsubscribe;
    });

    // Each client leaves as soon as it has the response: the stream is still subscribing then.
    const streams = 20;
    await Promise.all(
      Array.from({ length: streams }, async (_, i) => {
        const res = await app.request(`/api/v1/events/stream?topic=gone-${i}`, {
          headers: { authorization: `Bearer ${p.key}`, "x-project-id": p.projectId },
        });
        expect(res.status).toBe(200);
        await res.body!.cancel();
      }),
    );
    await vi.waitFor(
      () =>
        expect({ subscribed, listening: hub.listenerCount }).toEqual({ subscribed: streams, listening: 0 }),
      {
        timeout: 10_000,
      },
    );
  });
});
