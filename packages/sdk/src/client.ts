import type {
  BatchRunResponse,
  CancelExecutionResponse,
  EventResponse,
  ExecutionResponse,
  ListEventsResponse,
  ListExecutionsQuery,
  ListExecutionsResponse,
  ListQueuesResponse,
  ListStepsResponse,
  ResumeExecutionResponse,
  RunAndWaitResponse,
  RunWorkflowResponse,
  WaitUntil,
} from "@spool/shared";
import { isWaitOver, MAX_DETAIL_PAGE_SIZE, type WorkflowDefinition } from "@spool/shared";
import type { z } from "zod";

export type Execution = z.infer<typeof ExecutionResponse>;
export type RunReceipt = z.infer<typeof RunWorkflowResponse>;
export type StepsPage = z.infer<typeof ListStepsResponse>;
export type Step = StepsPage["steps"][number];
export type PublishedEvent = z.infer<typeof EventResponse>;
export type RunResult = z.infer<typeof RunAndWaitResponse>;
export type QueueState = z.infer<typeof ListQueuesResponse>["queues"][number];

/** A list's query: its filters (as strings, numbers or their enum values) and paging. */
type ListQuery<Q extends z.ZodType> = { [K in keyof z.input<Q>]?: z.input<Q>[K] | number } & {
  limit?: number;
  cursor?: string;
};

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

/** `?k=v&…` of the parameters that are set, or "" when none is. */
function queryString(params: Record<string, string | number | undefined>): string {
  const qs = new URLSearchParams(
    Object.entries(params).flatMap(([k, v]): [string, string][] =>
      v === undefined || v === "" ? [] : [[k, String(v)]],
    ),
  );
  return qs.size ? `?${qs}` : "";
}

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
    /** A page of runs, newest first; filters as the API's (e.g. `{ blocked: "no_worker" }`). */
    list: (query: ListQuery<typeof ListExecutionsQuery> = {}) =>
      request<z.infer<typeof ListExecutionsResponse>>("GET", `/executions${queryString(query)}`),
    /** One page of a run's steps, in the order it reached them; pass `next_cursor` for the next. */
    stepsPage: (id: string, page: { limit?: number; cursor?: string } = {}) =>
      request<StepsPage>("GET", `/executions/${encodeURIComponent(id)}/steps${queryString(page)}`),
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
      request<z.infer<typeof ResumeExecutionResponse>>(
        "POST",
        `/executions/${encodeURIComponent(id)}/resume`,
        { data },
      ),
    cancel: (id: string) =>
      request<z.infer<typeof CancelExecutionResponse>>(
        "POST",
        `/executions/${encodeURIComponent(id)}/cancel`,
      ),
    /**
     * The execution once it is completed, failed or cancelled, or with `until: "blocked"` also once it
     * waits (timer, event, child) or is suspended for input. Long-polls (`?wait=`): the server answers
     * the moment that happens, with no polling interval to wait out.
     */
    async waitForResult(
      id: string,
      { timeoutMs = 60_000, until = "terminal" }: { timeoutMs?: number; until?: WaitUntil } = {},
    ): Promise<Execution> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const waitSeconds = Math.min(MAX_WAIT_SECONDS, Math.max(0, deadline - Date.now()) / 1000);
        const e = await request<Execution>(
          "GET",
          `/executions/${encodeURIComponent(id)}?wait=${waitSeconds.toFixed(3)}&until=${until}`,
        );
        if (isWaitOver(e.status, until)) return e;
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
    /**
     * Starts a run and waits up to `waitSeconds` (max 120) for it to finish, or with `until:
     * "blocked"` to finish or park; the run as it stands then (its `status` says which).
     */
    runAndWait: <I>(
      workflow: WorkflowRef<I>,
      input: I,
      o: RunOptions & { waitSeconds?: number; until?: WaitUntil } = {},
    ) =>
      request<RunResult>(
        "POST",
        `/workflows/${encodeURIComponent(idOf(workflow))}/run?wait=${Math.min(MAX_WAIT_SECONDS, o.waitSeconds ?? 30)}&until=${o.until ?? "terminal"}`,
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
    queues: {
      /** A page of the project's queues with their limits, counts and consumers. */
      list: (page: { limit?: number; cursor?: string } = {}) =>
        request<z.infer<typeof ListQueuesResponse>>("GET", `/queues${queryString(page)}`),
    },
    request,
  };
}

export type SpoolClient = ReturnType<typeof createClient>;
