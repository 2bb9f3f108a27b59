import type {
  BatchRunResponse,
  EventResponse,
  ExecutionResponse,
  ListEventsResponse,
  ListExecutionsResponse,
  ListStepsResponse,
  RunWorkflowResponse,
} from "@spool/shared";
import { isTerminal, MAX_DETAIL_PAGE_SIZE, type WorkflowDefinition } from "@spool/shared";
import type { z } from "zod";

export type Execution = z.infer<typeof ExecutionResponse>;
export type RunReceipt = z.infer<typeof RunWorkflowResponse>;
export type StepsPage = z.infer<typeof ListStepsResponse>;
export type Step = StepsPage["steps"][number];
export type PublishedEvent = z.infer<typeof EventResponse>;

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  projectId: string;
  fetch?: typeof fetch;
}

export interface RunOptions {
  idempotencyKey?: string;
  queueName?: string;
  deploymentId?: string;
  concurrencyKey?: string;
  runTimeoutSeconds?: number;
  sessionId?: string;
  userId?: string;
}

/** An API error: the contract's `{error, error_type, details}` with the HTTP status. */
export class SpoolApiError extends Error {
  override name = "SpoolApiError";
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

type WorkflowRef<I> = string | WorkflowDefinition<I, unknown>;

/** The longest single wait the API grants (`?wait=`, seconds). */
const MAX_WAIT_SECONDS = 120;
const idOf = <I>(w: WorkflowRef<I>) => (typeof w === "string" ? w : w.id);

/** A typed client of the REST API (`/api/v1`). */
export function createClient(options: ClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? fetch;

  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const res = await doFetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.apiKey}`,
        "x-project-id": options.projectId,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const e = (parsed ?? {}) as { error?: string; error_type?: string; details?: unknown };
      throw new SpoolApiError(res.status, e.error_type ?? "UNKNOWN", e.error ?? res.statusText, e.details);
    }
    return parsed as T;
  }

  const runBody = (input: unknown, o: RunOptions = {}) => ({
    input,
    queue_name: o.queueName,
    deployment_id: o.deploymentId,
    concurrency_key: o.concurrencyKey,
    run_timeout_seconds: o.runTimeoutSeconds,
    session_id: o.sessionId,
    user_id: o.userId,
  });
  const idem = (o?: RunOptions): Record<string, string> =>
    o?.idempotencyKey ? { "idempotency-key": o.idempotencyKey } : {};

  const executions = {
    get: (id: string) => request<Execution>("GET", `/executions/${encodeURIComponent(id)}`),
    list: (query: Record<string, string | number | undefined> = {}) => {
      const qs = new URLSearchParams(
        Object.entries(query)
          .filter((e): e is [string, string | number] => e[1] !== undefined)
          .map(([k, v]): [string, string] => [k, String(v)]),
      );
      return request<z.infer<typeof ListExecutionsResponse>>("GET", `/executions${qs.size ? `?${qs}` : ""}`);
    },
    /** One page of a run's steps, in the order it reached them; pass `next_cursor` for the next. */
    stepsPage: (id: string, page: { limit?: number; cursor?: string } = {}) => {
      const qs = new URLSearchParams();
      if (page.limit !== undefined) qs.set("limit", String(page.limit));
      if (page.cursor) qs.set("cursor", page.cursor);
      return request<StepsPage>(
        "GET",
        `/executions/${encodeURIComponent(id)}/steps${qs.size ? `?${qs}` : ""}`,
      );
    },
    /** All of a run's steps, in the order it reached them (follows the pages). */
    async steps(id: string): Promise<Step[]> {
      const steps: Step[] = [];
      let cursor: string | undefined;
      do {
        const page = await executions.stepsPage(id, { limit: MAX_DETAIL_PAGE_SIZE, cursor });
        steps.push(...page.steps);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return steps;
    },
    resume: (id: string, data: Record<string, unknown> = {}) =>
      request<{ execution_id: string; status: string }>(
        "POST",
        `/executions/${encodeURIComponent(id)}/resume`,
        { data },
      ),
    cancel: (id: string) =>
      request<{ execution_id: string; status: string; cancelled_at: string | null }>(
        "POST",
        `/executions/${encodeURIComponent(id)}/cancel`,
      ),
    /**
     * The execution once it is completed, failed or cancelled. Long-polls (`?wait=`): the server
     * answers the moment the run finishes, with no polling interval to wait out.
     */
    async waitForResult(id: string, { timeoutMs = 60_000 } = {}): Promise<Execution> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const waitSeconds = Math.min(MAX_WAIT_SECONDS, Math.max(0, deadline - Date.now()) / 1000);
        const e = await request<Execution>(
          "GET",
          `/executions/${encodeURIComponent(id)}?wait=${waitSeconds.toFixed(3)}`,
        );
        if (isTerminal(e.status)) return e;
        if (Date.now() >= deadline)
          throw new Error(`execution ${id} is still ${e.status} after ${timeoutMs} ms`);
      }
    },
  };

  const events = {
    /** Publishes one event (or several, in order) to a topic; returns them with their sequence ids. */
    publish: async (
      topic: string,
      data: Record<string, unknown> | Record<string, unknown>[],
      o: { eventType?: string; idempotencyKey?: string } = {},
    ) =>
      (
        await request<{ events: PublishedEvent[] }>(
          "POST",
          "/events/publish",
          Array.isArray(data)
            ? { topic, event_type: o.eventType, events: data.map((d) => ({ data: d })) }
            : { topic, event_type: o.eventType, data },
          o.idempotencyKey ? { "idempotency-key": o.idempotencyKey } : {},
        )
      ).events,
    /** A topic's events after a sequence id, oldest first. */
    list: (topic: string, o: { afterSequenceId?: number; limit?: number } = {}) =>
      request<z.infer<typeof ListEventsResponse>>(
        "GET",
        `/events?${new URLSearchParams({
          topic,
          after_sequence_id: String(o.afterSequenceId ?? 0),
          limit: String(o.limit ?? 50),
        })}`,
      ),
  };

  return {
    /** Starts a run; pass the definition for a typed input. */
    run: <I>(workflow: WorkflowRef<I>, input: I, o?: RunOptions) =>
      request<RunReceipt>(
        "POST",
        `/workflows/${encodeURIComponent(idOf(workflow))}/run`,
        runBody(input, o),
        idem(o),
      ),
    /** Starts several runs, all or nothing; each may have its own queue, concurrency key and so on. */
    runBatch: (
      runs: ({ workflow: WorkflowRef<unknown>; input: unknown } & Omit<RunOptions, "idempotencyKey">)[],
      o?: RunOptions,
    ) =>
      request<z.infer<typeof BatchRunResponse>>(
        "POST",
        "/workflows/batch_run",
        {
          workflows: runs.map(({ workflow, input, ...r }) => ({
            workflow_id: idOf(workflow),
            ...runBody(input, r),
          })),
        },
        idem(o),
      ),
    executions,
    events,
    request,
  };
}

export type SpoolClient = ReturnType<typeof createClient>;
