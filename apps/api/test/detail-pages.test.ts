// Paging of one execution's steps and one trace's spans: `limit` (default 100, max 1000) and `cursor`,
// `next_cursor` null on the last page; following the cursors returns every item once, in order.
import { randomBytes } from "node:crypto";
import { claimOf } from "@spool/engine";
import { createClient } from "@spool/sdk";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

type Project = { projectId: string; key: string };
type Page<K extends string, T> = { [key in K]: T[] } & { next_cursor: string | null };
type StepBody = { step_key: string; status: string; output: unknown };
type SpanBody = { span_id: string; parent_span_id: string | null; name: string; started_at: string };
type TraceBody = Page<"spans", SpanBody> & { span_count: number; error_count: number; status: string | null };

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

describe("paging steps and spans", () => {
  let p: Project;
  const call = (path: string) => api.request(path, { key: p.key, projectId: p.projectId });
  const json = async <T>(path: string): Promise<T> => {
    const res = await call(path);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as T;
  };
  /** Follows next_cursor from the first page; `between` runs after each page (to add items meanwhile). */
  async function all<K extends string, T>(
    path: string,
    key: K,
    limit: number,
    between: (page: number) => Promise<void> = async () => {},
  ) {
    const items: T[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page: Page<K, T> = await json<Page<K, T>>(`${path}${query}`);
      expect(page[key].length).toBeLessThanOrEqual(limit);
      items.push(...page[key]);
      pages.push(page[key].length);
      cursor = page.next_cursor;
      await between(pages.length);
    } while (cursor !== null);
    return { items, pages };
  }

  beforeAll(async () => {
    p = await api.createProject("pages");
  });

  describe("GET /executions/{id}/steps", () => {
    let executionId: string;
    let save: (key: string, seq: number) => Promise<unknown>;
    const STEPS = 250;

    beforeAll(async () => {
      const reg = { key: p.key, projectId: p.projectId, method: "POST" } as const;
      await api.request("/api/v1/workers/deployments", { ...reg, json: { deployment_id: "v1" } });
      await api.request("/api/v1/workers/deployments/v1/workflows", {
        ...reg,
        json: { workflow_id: "many" },
      });
      const run = await api.request("/api/v1/workflows/many/run", { ...reg, json: { input: {} } });
      executionId = ((await run.json()) as { execution_id: string }).execution_id;
      // As a worker: start the run and store its steps through the engine's journal.
      const started = await api.engine.executions.start(executionId, 0, null);
      if (started.status !== "started") throw new Error("the run did not start");
      const journal = await api.engine.executions.journal(executionId, claimOf(started.execution));
      save = (key, seq) =>
        journal.saveStep({
          stepKey: key,
          seq,
          kind: "run",
          status: "completed",
          output: { key },
          attempts: 1,
          startedAt: new Date(),
        });
      // Steps 200-249 share one seq, as two steps a remote worker reports at once may.
      for (let i = 0; i < STEPS; i++) await save(`s-${i}`, i < 200 ? i + 1 : 150);
    });

    it("the first page holds 100 steps by default; limit 1000 reads them all in one", async () => {
      const first = await json<Page<"steps", StepBody>>(`/api/v1/executions/${executionId}/steps`);
      expect(first.steps).toHaveLength(100);
      expect(first.steps.slice(0, 3).map((s) => s.step_key)).toEqual(["s-0", "s-1", "s-2"]);
      expect(first.next_cursor).toEqual(expect.any(String));
      const whole = await json<Page<"steps", StepBody>>(`/api/v1/executions/${executionId}/steps?limit=1000`);
      expect(whole.steps).toHaveLength(STEPS);
      expect(whole.next_cursor).toBeNull();
    });

    it("following next_cursor returns every step once, in seq order, also while steps are added", async () => {
      const whole = await json<Page<"steps", StepBody>>(`/api/v1/executions/${executionId}/steps?limit=1000`);
      const { items, pages } = await all<"steps", StepBody>(
        `/api/v1/executions/${executionId}/steps`,
        "steps",
        7,
        // A step reached while a client pages shows up once, at its place (the end).
        async (n) => void (n === 2 ? await save("late", 1000) : undefined),
      );
      expect(pages.length).toBe(Math.ceil((STEPS + 1) / 7));
      expect(items.map((s) => s.step_key)).toEqual([...whole.steps.map((s) => s.step_key), "late"]);
      expect(new Set(items.map((s) => s.step_key)).size).toBe(STEPS + 1);
      const seqOf = (key: string) =>
        key === "late" ? 1000 : Number(key.slice(2)) < 200 ? Number(key.slice(2)) + 1 : 150;
      const seqs = items.map((s) => seqOf(s.step_key));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    });

    it("the SDK's steps() follows the pages; stepsPage() reads one", async () => {
      const client = createClient({
        baseUrl: "http://spool.test",
        apiKey: p.key,
        projectId: p.projectId,
        fetch: async (input, init) => api.fetch(new Request(input, init)),
      });
      const steps = await client.executions.steps(executionId);
      expect(steps).toHaveLength(STEPS + 1);
      expect(steps[0]).toMatchObject({ step_key: "s-0", status: "completed", output: { key: "s-0" } });
      const page = await client.executions.stepsPage(executionId, { limit: 2 });
      expect(page.steps.map((s) => s.step_key)).toEqual(["s-0", "s-1"]);
      const next = await client.executions.stepsPage(executionId, { limit: 2, cursor: page.next_cursor! });
      expect(next.steps.map((s) => s.step_key)).toEqual(["s-2", "s-3"]);
    });

    it("a bad limit or cursor is 400 INVALID_INPUT; an unknown execution 404", async () => {
      const base = `/api/v1/executions/${executionId}/steps`;
      const spanCursor = Buffer.from(JSON.stringify({ k: "2026-03-01T10:00:00.000Z", id: hex(8) })).toString(
        "base64url",
      );
      const notUuid = Buffer.from(JSON.stringify({ k: 3, id: "s-3" })).toString("base64url");
      for (const q of [
        "?limit=0",
        "?limit=1001",
        "?limit=ten",
        "?cursor=garbage",
        `?cursor=${spanCursor}`,
        `?cursor=${notUuid}`,
      ]) {
        await expectError(await call(`${base}${q}`), 400, "INVALID_INPUT");
      }
      await expectError(
        await call("/api/v1/executions/00000000-0000-4000-8000-000000000000/steps"),
        404,
        "NOT_FOUND",
      );
    });
  });

  describe("GET /traces/{id}", () => {
    const traceId = hex(16);
    const rootId = hex(8);
    const T0 = Date.parse("2026-04-01T10:00:00.000Z");
    const at = (ms: number) => new Date(T0 + ms).toISOString();
    const span = (id: string, name: string, parent: string | null, ms: number, error = false) => ({
      trace_id: traceId,
      span_id: id,
      parent_span_id: parent,
      name,
      span_type: parent === null ? "workflow" : parent === rootId ? "step" : "tool",
      started_at: at(ms),
      ended_at: at(ms + 5),
      output: { name },
      ...(error ? { error: { name: "Error", message: `${name} failed` } } : {}),
    });
    // A root, 30 steps starting three to a millisecond, each with 7 tools starting with it: many spans
    // share a millisecond, so the order's tie-breakers (parents first, names as numbers) decide.
    const spans = [span(rootId, "run", null, 0)];
    for (let i = 0; i < 30; i++) {
      const step = hex(8);
      spans.push(span(step, `step-${i}`, rootId, 1 + Math.floor(i / 3), i % 10 === 0));
      for (const j of [12, 1, 10, 2, 3, 5, 8])
        spans.push(span(hex(8), `tool-${i}-${j}`, step, 1 + Math.floor(i / 3)));
    }

    beforeAll(async () => {
      const res = await api.request("/internal/spans/batch", {
        method: "POST",
        key: p.key,
        projectId: p.projectId,
        json: { spans },
      });
      expect(await res.json()).toEqual({ accepted: spans.length });
    });

    it("the first page holds 100 spans by default; counts cover the whole trace on every page", async () => {
      const first = await json<TraceBody>(`/api/v1/traces/${traceId}`);
      expect(first.spans).toHaveLength(100);
      expect(first.next_cursor).toEqual(expect.any(String));
      expect(first).toMatchObject({ span_count: spans.length, error_count: 3 });
      const last = await json<TraceBody>(`/api/v1/traces/${traceId}?limit=1000`);
      expect(last.spans).toHaveLength(spans.length);
      expect(last.next_cursor).toBeNull();
    });

    it("following next_cursor returns every span once, in the trace's order, also while spans are added", async () => {
      const whole = (await json<TraceBody>(`/api/v1/traces/${traceId}?limit=1000`)).spans;
      // The trace's order: oldest first; in one millisecond parents first, then siblings by name.
      expect(whole[0]?.span_id).toBe(rootId);
      expect(whole.slice(1, 5).map((s) => s.name)).toEqual(["step-0", "step-1", "step-2", "tool-0-1"]);
      expect(whole.slice(4, 11).map((s) => s.name)).toEqual(
        [1, 2, 3, 5, 8, 10, 12].map((j) => `tool-0-${j}`),
      );
      const late = span(hex(8), "late", rootId, 60_000);
      const { items } = await all<"spans", SpanBody>(`/api/v1/traces/${traceId}`, "spans", 7, async (n) => {
        if (n !== 3) return;
        const res = await api.request("/internal/spans/batch", {
          method: "POST",
          key: p.key,
          projectId: p.projectId,
          json: { spans: [late] },
        });
        expect(res.status).toBe(200);
      });
      expect(items.map((s) => s.span_id)).toEqual([...whole.map((s) => s.span_id), late.span_id]);
      expect(items[7]).toMatchObject({ output: { name: whole[7]?.name } });
    });

    it("a bad limit or cursor is 400 INVALID_INPUT, a cursor of another trace too", async () => {
      const other = hex(16);
      const otherSpan = { ...span(hex(8), "other", null, 0), trace_id: other };
      await api.request("/internal/spans/batch", {
        method: "POST",
        key: p.key,
        projectId: p.projectId,
        json: {
          spans: [otherSpan, { ...span(hex(8), "other-step", otherSpan.span_id, 1), trace_id: other }],
        },
      });
      const foreign = (await json<TraceBody>(`/api/v1/traces/${other}?limit=1`)).next_cursor;
      expect(foreign).toEqual(expect.any(String));
      const stepCursor = Buffer.from(
        JSON.stringify({ k: 3, id: "00000000-0000-4000-8000-000000000000" }),
      ).toString("base64url");
      for (const q of [
        "?limit=0",
        "?limit=1001",
        "?cursor=garbage",
        `?cursor=${foreign}`,
        `?cursor=${stepCursor}`,
      ]) {
        await expectError(await call(`/api/v1/traces/${traceId}${q}`), 400, "INVALID_INPUT");
      }
    });
  });
});
