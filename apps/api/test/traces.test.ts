import { traceIdOf } from "@spool/shared";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

type Project = { projectId: string; key: string };
const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");

/** A small trace tree as a remote worker would send it: root, a step, an LLM call under it. */
const treeOf = (t: number, opts: { workflow: string; status: string; error?: boolean; at: string }) => {
  const traceId = hex(t, 32);
  const root = hex(t * 10 + 1, 16);
  const step = hex(t * 10 + 2, 16);
  const ended = new Date(new Date(opts.at).getTime() + 1500).toISOString();
  return {
    traceId,
    root,
    spans: [
      {
        trace_id: traceId,
        span_id: root,
        name: opts.workflow,
        span_type: "workflow",
        attributes: { workflow_id: opts.workflow, status: opts.status },
        started_at: opts.at,
        ended_at: ended,
        ...(opts.error ? { error: { name: "Error", message: "boom" } } : {}),
      },
      {
        trace_id: traceId,
        span_id: step,
        parent_span_id: root,
        name: "s1",
        span_type: "step",
        started_at: opts.at,
      },
      {
        trace_id: traceId,
        span_id: hex(t * 10 + 3, 16),
        parent_span_id: step,
        name: "llm-1",
        span_type: "llm",
        attributes: { "llm.usage.input_tokens": 12 },
        input: { messages: [{ role: "user", content: "hi" }] },
        output: { text: "hello" },
        started_at: opts.at,
        ended_at: ended,
      },
    ],
  };
};

describe("traces", () => {
  let a: Project;
  let b: Project;
  const call = (p: Project, path: string, init: { method?: string; json?: unknown } = {}) =>
    api.request(path, { ...init, key: p.key, projectId: p.projectId });
  const list = async (p: Project, query: string) => {
    const res = await call(p, `/api/v1/traces${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as {
      traces: { trace_id: string; [k: string]: unknown }[];
      next_cursor: string | null;
    };
  };

  const ok = treeOf(1, { workflow: "wf-a", status: "completed", at: "2026-03-01T10:00:00.000Z" });
  const bad = treeOf(2, { workflow: "wf-a", status: "failed", error: true, at: "2026-03-01T11:00:00.000Z" });
  const other = treeOf(3, { workflow: "wf-b", status: "completed", at: "2026-03-01T12:00:00.000Z" });

  beforeAll(async () => {
    a = await api.createProject("traces-a");
    b = await api.createProject("traces-b");
    const res = await call(a, "/internal/spans/batch", {
      method: "POST",
      json: { spans: [...ok.spans, ...bad.spans, ...other.spans] },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toEqual({ accepted: 9 });
  });

  it("gets one trace with its span tree", async () => {
    const res = await call(a, `/api/v1/traces/${bad.traceId}`);
    expect(res.status).toBe(200);
    const t = (await res.json()) as Record<string, unknown> & { spans: Record<string, unknown>[] };
    expect(t).toMatchObject({
      trace_id: bad.traceId,
      status: "failed",
      started_at: "2026-03-01T11:00:00.000Z",
      ended_at: "2026-03-01T11:00:01.500Z",
      span_count: 3,
      error_count: 1,
    });
    expect(t.spans.map((s) => [s.name, s.span_type, s.parent_span_id])).toEqual([
      ["wf-a", "workflow", null],
      ["s1", "step", bad.root],
      ["llm-1", "llm", hex(22, 16)],
    ]);
    expect(t.spans[2]).toMatchObject({
      attributes: { "llm.usage.input_tokens": 12 },
      input: { messages: [{ role: "user", content: "hi" }] },
      output: { text: "hello" },
      error: null,
    });
  });

  it("lists traces newest first, with every filter", async () => {
    const all = await list(a, "");
    expect(all.traces.map((t) => t.trace_id)).toEqual([other.traceId, bad.traceId, ok.traceId]);
    expect(all.traces[1]).toEqual({
      trace_id: bad.traceId,
      root_span_name: "wf-a",
      root_span_type: "workflow",
      started_at: "2026-03-01T11:00:00.000Z",
      ended_at: "2026-03-01T11:00:01.500Z",
      duration_ms: 1500,
      status: "failed",
      error: { name: "Error", message: "boom" },
    });
    const ids = async (q: string) => (await list(a, q)).traces.map((t) => t.trace_id);
    expect(await ids("?workflow_id=wf-a")).toEqual([bad.traceId, ok.traceId]);
    expect(await ids("?has_error=true&workflow_id=wf-a")).toEqual([bad.traceId]);
    expect(await ids("?has_error=false")).toEqual([other.traceId, ok.traceId]);
    expect(await ids("?status=completed")).toEqual([other.traceId, ok.traceId]);
    expect(await ids("?root_span_name=wf-b")).toEqual([other.traceId]);
    expect(await ids("?start_time=2026-03-01T10:30:00Z")).toEqual([other.traceId, bad.traceId]);
    expect(await ids("?end_time=2026-03-01T11:00:00Z")).toEqual([bad.traceId, ok.traceId]);
    expect(await ids("?start_time=2026-03-01T10:30:00Z&end_time=2026-03-01T11:30:00Z")).toEqual([
      bad.traceId,
    ]);
  });

  it("pages with limit and cursor", async () => {
    const first = await list(a, "?limit=2");
    expect(first.traces).toHaveLength(2);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await list(a, `?limit=2&cursor=${first.next_cursor}`);
    expect(second.traces.map((t) => t.trace_id)).toEqual([ok.traceId]);
    expect(second.next_cursor).toBeNull();
  });

  it("traces of executions come from the engine: the execution's own span with its status", async () => {
    await call(a, "/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "v1" } });
    await call(a, "/api/v1/workers/deployments/v1/workflows", {
      method: "POST",
      json: { workflow_id: "wf-run" },
    });
    const run = await call(a, "/api/v1/workflows/wf-run/run", { method: "POST", json: { input: { n: 1 } } });
    const { execution_id } = (await run.json()) as { execution_id: string };
    await api.engine.traces.sync(execution_id);
    const t = await list(a, "?workflow_id=wf-run&status=queued");
    expect(t.traces).toMatchObject([
      { trace_id: traceIdOf(execution_id), root_span_name: "wf-run", status: "queued" },
    ]);
  });

  it("404 for an unknown trace; 400 for invalid ids, filters and bodies", async () => {
    await expectError(await call(a, `/api/v1/traces/${hex(999, 32)}`), 404, "NOT_FOUND");
    await expectError(await call(a, "/api/v1/traces/not-a-trace"), 400, "INVALID_INPUT");
    for (const q of [
      "?has_error=yes",
      "?status=exploded",
      "?start_time=yesterday",
      "?limit=0",
      "?limit=501",
      "?cursor=garbage",
      "?workflow_id=bad%20id",
    ]) {
      await expectError(await call(a, `/api/v1/traces${q}`), 400, "INVALID_INPUT");
    }
    for (const json of [
      {},
      { spans: [] },
      { spans: [{ ...ok.spans[0], trace_id: "short" }] },
      { spans: [{ ...ok.spans[0], started_at: "then" }] },
    ]) {
      await expectError(
        await call(a, "/internal/spans/batch", { method: "POST", json }),
        400,
        "INVALID_INPUT",
      );
    }
    const noAuth = await api.request("/internal/spans/batch", { method: "POST", json: { spans: ok.spans } });
    await expectError(noAuth, 401, "UNAUTHORIZED");
  });

  it("spans that start in the same millisecond keep the tree's order: parent first, then siblings by name", async () => {
    const traceId = hex(777, 32);
    const at = "2026-03-01T10:00:00.000Z";
    const span = (id: number, name: string, parent: number | null) => ({
      trace_id: traceId,
      span_id: hex(id, 16),
      parent_span_id: parent === null ? null : hex(parent, 16),
      name,
      span_type: parent === null ? "workflow" : "tool",
      started_at: at,
    });
    // Ids chosen so that ordering by id would put the children first and tool-1-10 before tool-1-2.
    const spans = [
      span(0x90, "agent", null),
      span(0x10, "tool-1-10", 0x90),
      span(0x20, "tool-1-2", 0x90),
      span(0x30, "tool-1-1", 0x90),
    ];
    await call(a, "/internal/spans/batch", { method: "POST", json: { spans } });
    const t = (await (await call(a, `/api/v1/traces/${traceId}`)).json()) as { spans: { name: string }[] };
    expect(t.spans.map((s) => s.name)).toEqual(["agent", "tool-1-1", "tool-1-2", "tool-1-10"]);
  });

  it("another project sees none of it and cannot overwrite it", async () => {
    expect((await list(b, "")).traces).toEqual([]);
    await expectError(await call(b, `/api/v1/traces/${ok.traceId}`), 404, "NOT_FOUND");
    const hijack = await call(b, "/internal/spans/batch", {
      method: "POST",
      json: { spans: [{ ...ok.spans[0], name: "hijacked" }] },
    });
    expect(await hijack.json()).toEqual({ accepted: 0 });
    const still = (await (await call(a, `/api/v1/traces/${ok.traceId}`)).json()) as {
      spans: { name: string }[];
    };
    expect(still.spans[0]!.name).toBe("wf-a");
    expect((await list(b, "")).traces).toEqual([]);
  });
});
