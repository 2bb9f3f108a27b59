// Request bodies that pass the shape of each route but carry values Postgres cannot store: NUL in
// text or JSON, unpaired surrogates and over-deep nesting in JSON, integers past a 32-bit column,
// dates outside years 1-9999. Each must be a 400 INVALID_INPUT naming the field, never a 500.
import { encodeCursor } from "@spool/shared";

export const NUL = "a\u0000b";
/** Postgres jsonb refuses an unpaired surrogate escape; text would silently turn it into U+FFFD. */
export const LONE_SURROGATE = "a\ud800";
/** Past every 32-bit Int column (max 2147483647). */
export const BIG_INT = 3_000_000_000;
export const YEAR_0 = "0000-01-01T00:00:00Z";
/** Valid RFC 3339 strings whose UTC instant falls in year 0 or year 10000. */
export const OFFSET_DATES = ["0001-01-01T00:30:00+01:00", "9999-12-31T23:00:00-05:00"];

const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

/** A value to put in a field; `at` is where below the field the error must point. */
export interface Hostile {
  value: unknown;
  at?: string;
}

/** JSON objects (input, data, metadata, ...) that must be refused. */
export const HOSTILE_JSON: Hostile[] = [
  { value: { a: { b: ["x", NUL] } }, at: "a.b.1" },
  { value: { [NUL]: 1 } },
  { value: { a: LONE_SURROGATE }, at: "a" },
  { value: { a: nested(200) } },
];

const UUID = "00000000-0000-4000-8000-000000000000";
/** Cursors a client could forge: well-formed, but their timestamp or id cannot reach Postgres. */
export const FORGED_TIME_CURSORS = [
  encodeCursor({ k: "0000-01-01T00:00:00.000Z", id: UUID }),
  encodeCursor({ k: "-000001-01-01T00:00:00.000Z", id: UUID }),
  encodeCursor({ k: "+010000-01-01T00:00:00.000Z", id: UUID }),
];
export const NUL_ID_CURSOR = encodeCursor({ k: "x", id: NUL });
/** Lists paged by client id, not time: their cursor's `k` is never read as a date. */
export const ID_KEYED_LISTS = [
  "/api/v1/deployments",
  "/api/v1/workflows",
  "/api/v1/agents",
  "/api/v1/tools",
  "/api/v1/queues",
];

export interface BodyCase {
  /** "METHOD /path" as in the OpenAPI document. */
  route: string;
  admin?: boolean;
  /** A body the route accepts. */
  base: Record<string, unknown>;
  /** Dotted field path -> hostile values put there, one request each. */
  hostile: Record<string, Hostile[]>;
}

const span = {
  trace_id: "0b6f5c9e6d1c4f5e9d6b2f0d1e6a7c11",
  span_id: "5c1e0f2a9b3d4e6f",
  name: "s",
  span_type: "custom",
  started_at: "2026-01-01T00:00:00Z",
};
const each = (fields: string[], values: Hostile[]) => Object.fromEntries(fields.map((f) => [f, values]));
const jsonFields = (...fields: string[]) => each(fields, HOSTILE_JSON);
const textFields = (...fields: string[]) => each(fields, [{ value: NUL }]);
const intFields = (...fields: string[]) => each(fields, [{ value: BIG_INT }]);

/** Every route with a body that can carry text, JSON, integers or dates. Fixture ids: see errors.test.ts. */
export const BODY_CASES: BodyCase[] = [
  { route: "POST /api/v1/session", base: { api_key: "sk_x" }, hostile: textFields("api_key") },
  {
    route: "POST /api/v1/projects",
    admin: true,
    base: { name: "p" },
    hostile: { ...textFields("name", "description"), name: [{ value: NUL }, { value: LONE_SURROGATE }] },
  },
  {
    route: "POST /api/v1/projects/{project_id}/api-keys",
    admin: true,
    base: { name: "k" },
    hostile: textFields("name"),
  },
  {
    route: "POST /api/v1/workers/queues",
    base: { deployment_id: "d1", queues: [{ name: "q" }] },
    hostile: intFields("queues.0.concurrency_limit"),
  },
  {
    route: "POST /api/v1/agents/register",
    base: { id: "ag", deployment_id: "d1", provider: "openai", model: "m" },
    hostile: {
      ...textFields("provider", "model", "system_prompt"),
      ...jsonFields("config", "metadata"),
      ...intFields("max_output_tokens"),
      tools: [{ value: [{ name: NUL }], at: "0" }],
    },
  },
  {
    route: "POST /api/v1/tools/register",
    base: { id: "t1", deployment_id: "d1" },
    hostile: { ...textFields("tool_type", "description"), ...jsonFields("parameters", "metadata") },
  },
  {
    route: "POST /api/v1/workers/register",
    base: { deployment_id: "d1", mode: "push" },
    hostile: {
      ...textFields("hostname", "capabilities.runtime"),
      push_endpoint_url: [{ value: "http://host/a\u0000b" }],
      ...intFields("max_concurrent_executions"),
    },
  },
  {
    route: "POST /api/v1/workers/{worker_id}/heartbeat",
    base: {},
    hostile: intFields("running"),
  },
  {
    route: "POST /api/v1/workflows/{workflow_id}/run",
    base: {},
    hostile: {
      ...jsonFields("input", "payload", "initial_state"),
      ...textFields("concurrency_key", "session_id", "user_id", "step_key"),
      ...intFields("run_timeout_seconds"),
    },
  },
  {
    route: "POST /api/v1/workflows/batch_run",
    base: { workflows: [{ workflow_id: "wf" }] },
    hostile: {
      ...jsonFields("workflows.0.input", "initial_state"),
      ...textFields("workflows.0.concurrency_key", "session_id"),
      ...intFields("workflows.0.run_timeout_seconds"),
    },
  },
  {
    route: "POST /api/v1/executions/{execution_id}/resume",
    base: {},
    hostile: jsonFields("data"),
  },
  {
    route: "POST /api/v1/events/publish",
    base: { topic: "t", data: {} },
    hostile: { ...textFields("topic", "event_type"), ...jsonFields("data") },
  },
  {
    route: "POST /api/v1/events/publish",
    base: { topic: "t", events: [{ data: {} }] },
    hostile: { ...textFields("events.0.event_type"), ...jsonFields("events.0.data") },
  },
  {
    route: "POST /api/v1/event-triggers/register",
    base: { workflow_id: "wf", deployment_id: "d1", event_topic: "t", batch_size: 1 },
    hostile: { ...textFields("event_topic"), ...intFields("batch_size", "batch_timeout_seconds") },
  },
  {
    route: "POST /api/v1/schedules",
    base: { workflow_id: "wf", cron: "0 9 * * *" },
    hostile: {
      ...textFields("cron", "timezone", "key"),
      ...jsonFields("input"),
      ...intFields("catchup_window_seconds"),
    },
  },
  {
    route: "PATCH /api/v1/schedules/{schedule_id}",
    base: {},
    hostile: {
      ...textFields("cron", "timezone"),
      ...jsonFields("input"),
      ...intFields("catchup_window_seconds"),
    },
  },
  {
    route: "POST /internal/spans/batch",
    base: { spans: [span] },
    hostile: {
      ...textFields("spans.0.name"),
      ...jsonFields("spans.0.attributes"),
      "spans.0.input": [{ value: NUL }, { value: [LONE_SURROGATE], at: "0" }],
      "spans.0.output": [{ value: { [NUL]: 1 } }],
      "spans.0.error": [{ value: { message: NUL }, at: "message" }],
      "spans.0.started_at": [{ value: YEAR_0 }],
      "spans.0.ended_at": [{ value: YEAR_0 }],
    },
  },
  {
    route: "POST /internal/executions/{execution_id}/steps",
    base: { step_key: "s" },
    hostile: {
      ...textFields("step_key", "error", "error.message"),
      ...jsonFields("outputs"),
      ...intFields("seq", "attempts"),
      started_at: [{ value: YEAR_0 }],
    },
  },
  {
    route: "POST /internal/executions/{execution_id}/wait",
    base: { step_key: "s", wait_type: "event", wait_topic: "t" },
    hostile: {
      ...textFields("step_key", "wait_topic"),
      wait_until: [{ value: YEAR_0 }],
      expires_at: [{ value: YEAR_0 }],
    },
  },
  {
    route: "POST /internal/executions/{execution_id}/wait",
    base: { waits: [{ step_key: "s", seq: 1, kind: "sleep", wake_at: "2026-01-01T00:00:00Z" }] },
    hostile: {
      ...textFields("waits.0.step_key", "waits.0.topic"),
      ...jsonFields("waits.0.match"),
      ...intFields("waits.0.seq"),
      "waits.0.wake_at": [{ value: YEAR_0 }],
      "waits.0.payload": [{ value: NUL }],
    },
  },
  {
    route: "POST /internal/executions/{execution_id}/complete",
    base: {},
    hostile: { ...textFields("worker_id"), result: [{ value: NUL }], final_state: [{ value: { [NUL]: 1 } }] },
  },
  {
    route: "POST /internal/reports",
    base: {
      reports: [
        { execution_id: "00000000-0000-4000-8000-000000000000", claim: "1.1", step: { step_key: "s" } },
        { execution_id: "00000000-0000-4000-8000-000000000000", claim: "1.1", complete: {} },
      ],
    },
    hostile: {
      ...textFields("reports.0.execution_id", "reports.0.claim", "reports.0.step.step_key"),
      ...jsonFields("reports.0.step.outputs", "reports.1.complete.result"),
      ...intFields("reports.0.step.seq"),
      "reports.0.step.started_at": [{ value: YEAR_0 }],
    },
  },
  {
    route: "POST /internal/executions/{execution_id}/fail",
    base: { error: "boom" },
    hostile: { ...textFields("error", "stack", "worker_id"), ...intFields("max_retries") },
  },
  {
    route: "POST /internal/executions/{execution_id}/confirm-cancellation",
    base: {},
    hostile: textFields("worker_id"),
  },
  {
    route: "PUT /internal/executions/{execution_id}/otel-span-id",
    base: { otel_span_id: "a" },
    hostile: textFields("otel_span_id"),
  },
  {
    route: "POST /internal/executions/{execution_id}/step-spans",
    base: {
      steps: [
        {
          step_key: "s",
          kind: "run",
          status: "completed",
          attempts: 1,
          started_at: "2026-01-01T00:00:00Z",
          ended_at: "2026-01-01T00:00:01Z",
        },
      ],
    },
    hostile: {
      ...textFields("steps.0.step_key"),
      ...jsonFields("steps.0.attributes"),
      ...intFields("steps.0.attempts"),
      "steps.0.input": [{ value: NUL }],
      "steps.0.started_at": [{ value: YEAR_0 }],
    },
  },
  {
    route: "PUT /internal/session/{session_id}/memory",
    base: { summary: "s", messages: [{ role: "user", content: "hi" }] },
    hostile: { ...textFields("summary", "messages.0.role"), "messages.0.content": [{ value: NUL }] },
  },
];

/** Body routes whose fields are ids, enums and booleans only: nothing to put a hostile value in. */
export const ID_ONLY_BODIES = [
  "POST /api/v1/workers/deployments",
  "POST /api/v1/workers/deployments/{deployment_id}/workflows",
  "PATCH /api/v1/event-triggers/{trigger_id}",
];

/** A copy of `base` with `value` at the dotted `path` (array indexes as numbers). */
export function withValue(base: Record<string, unknown>, path: string, value: unknown) {
  const copy = structuredClone(base);
  const keys = path.split(".");
  let target: Record<string, unknown> = copy;
  for (const key of keys.slice(0, -1)) {
    target[key] ??= {};
    target = target[key] as Record<string, unknown>;
  }
  target[keys.at(-1)!] = value;
  return copy;
}
