// A remote worker written from the protocol's tables alone (spec/worker-protocol.md), with no Spool
// code: what a Polos SDK worker sends and reads, over plain HTTP. Tests script what each workflow
// does on a push; the class records every push and cancel it receives.
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Push {
  headers: IncomingMessage["headers"];
  raw: string;
  body: {
    worker_id: string;
    execution_id: string;
    workflow_id: string;
    deployment_id: string | null;
    payload: unknown;
    parent_execution_id: string | null;
    root_execution_id: string;
    root_workflow_id: string;
    step_key: string | null;
    retry_count: number;
    created_at: string | null;
    session_id: string | null;
    user_id: string | null;
    otel_traceparent: string | null;
    otel_span_id: string | null;
    initial_state: unknown;
    run_timeout_seconds: number | null;
    channel_context: unknown;
  };
}

export interface StoredStep {
  step_key: string;
  outputs: unknown;
  success: boolean;
  error: { message: string } | null;
  completed_at: string | null;
}

/** What a scripted workflow may do while handling a push. */
export interface PushContext {
  push: Push["body"];
  steps: Map<string, StoredStep>;
  /** POST /internal/executions/{id}/steps */
  saveStep(stepKey: string, outputs: unknown, success?: boolean, error?: string): Promise<Response>;
  /** POST /internal/executions/{id}/wait (the SDK reports nothing more for this push afterwards). */
  wait(body: Record<string, unknown>): Promise<Response>;
  complete(result: unknown): Promise<Response>;
  fail(error: string, retryable: boolean): Promise<Response>;
  /** The run's topic, where the SDK publishes suspend_<key>. */
  topic: string;
  /** A call with the SDK's headers, for anything else. */
  call(method: string, path: string, body?: unknown): Promise<Response>;
}

export type Script = (ctx: PushContext) => Promise<void>;

export class RawProtocolWorker {
  workerId = "";
  pushSecret: string | null = null;
  readonly pushes: Push[] = [];
  readonly cancels: { executionId: string; workerId: string | undefined }[] = [];
  /** Answers the next pushes with 429 ("at capacity") instead of taking them. */
  busyFor = 0;
  /** Answers the next pushes with 503, as a worker in trouble. */
  failFor = 0;
  private server: Server | undefined;
  private url = "";
  private readonly waiters: { test: (p: Push) => boolean; resolve: (p: Push) => void }[] = [];
  readonly running = new Set<Promise<void>>();

  constructor(
    private readonly o: {
      apiUrl: string;
      apiKey: string;
      projectId: string;
      deploymentId: string;
      scripts: Record<string, Script>;
      maxConcurrent?: number;
    },
  ) {}

  /** A call exactly as the SDK makes it: Content-Type on every call, a body only when truthy. */
  call(method: string, path: string, body?: unknown, workerId: string | undefined = this.workerId) {
    return fetch(`${this.o.apiUrl}${path}`, {
      method,
      headers: {
        "Content-Type": "application/json",
        Authorization: `Bearer ${this.o.apiKey}`,
        "X-Project-ID": this.o.projectId,
        ...(workerId ? { "X-Worker-ID": workerId } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  }

  async listen(): Promise<string> {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString();
      });
      req.on("end", () => {
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        };
        if (req.method === "POST" && req.url === "/execute") {
          if (this.busyFor > 0) {
            this.busyFor--;
            return send(429, { error: "Worker at capacity" });
          }
          if (this.failFor > 0) {
            this.failFor--;
            return send(503, { error: "temporarily broken" });
          }
          const body = JSON.parse(raw) as Push["body"];
          if (body.worker_id !== this.workerId) return send(400, { error: "Worker ID mismatch" });
          const push = { headers: req.headers, raw, body };
          this.pushes.push(push);
          for (const w of this.waiters.filter((x) => x.test(push))) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(push);
          }
          const script = this.o.scripts[body.workflow_id];
          if (script) {
            const running: Promise<void> = this.handle(push, script).finally(() =>
              this.running.delete(running),
            );
            this.running.add(running);
          }
          return send(200, { status: "accepted", execution_id: body.execution_id });
        }
        const cancel = /^\/cancel\/(.+)$/.exec(req.url ?? "");
        if (req.method === "POST" && cancel) {
          const executionId = decodeURIComponent(cancel[1]!);
          this.cancels.push({ executionId, workerId: req.headers["x-worker-id"] as string | undefined });
          return send(200, { status: "cancellation_requested", execution_id: executionId });
        }
        if (req.method === "GET" && req.url === "/health")
          return send(200, { status: "healthy", mode: "push" });
        send(404, { error: "not found" });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** Registration steps 1-7 of the protocol, in the SDK's order. */
  async register(workflows: { id: string; type?: "workflow" | "agent" | "tool" }[]) {
    const reg = await this.call(
      "POST",
      "/api/v1/workers/register",
      {
        deployment_id: this.o.deploymentId,
        project_id: this.o.projectId,
        mode: "push",
        capabilities: {
          runtime: "typescript",
          agent_ids: [],
          tool_ids: [],
          workflow_ids: workflows.map((w) => w.id),
        },
        max_concurrent_executions: this.o.maxConcurrent ?? 100,
        push_endpoint_url: this.url,
      },
      "",
    );
    if (reg.status !== 200) throw new Error(`register: ${reg.status} ${await reg.text()}`);
    const registered = (await reg.json()) as { worker_id: string; push_secret: string | null };
    this.workerId = registered.worker_id;
    this.pushSecret = registered.push_secret;
    const calls: [string, string, unknown][] = [
      ["POST", "/api/v1/workers/deployments", { deployment_id: this.o.deploymentId }],
      ...workflows.map((w): [string, string, unknown] => [
        "POST",
        `/api/v1/workers/deployments/${this.o.deploymentId}/workflows`,
        { workflow_id: w.id, workflow_type: w.type ?? "workflow", trigger_on_event: false, scheduled: false },
      ]),
      [
        "POST",
        "/api/v1/workers/queues",
        { deployment_id: this.o.deploymentId, queues: workflows.map((w) => ({ name: w.id })) },
      ],
      ["POST", `/api/v1/workers/${this.workerId}/online`, undefined],
    ];
    for (const [method, path, body] of calls) {
      const res = await this.call(method, path, body);
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    }
  }

  /** Step 8: one heartbeat; what it answers. */
  async heartbeat(): Promise<{ re_register: boolean }> {
    return (await (await this.call("POST", `/api/v1/workers/${this.workerId}/heartbeat`, {})).json()) as {
      re_register: boolean;
    };
  }

  /** Whether Spool signed this push with the secret it issued (t=<s>,v1=<hex HMAC of "<t>.<body>">). */
  signedBySpool(push: Push): boolean {
    const header = String(push.headers["x-spool-signature"] ?? "");
    const t = /t=(\d+)/.exec(header)?.[1];
    const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1];
    if (!this.pushSecret || !t || !v1) return false;
    return createHmac("sha256", this.pushSecret).update(`${t}.${push.raw}`).digest("hex") === v1;
  }

  nextPush(test: (p: Push) => boolean, timeoutMs = 20_000): Promise<Push> {
    const seen = this.pushes.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no matching push arrived")), timeoutMs);
      this.waiters.push({
        test,
        resolve: (p) => {
          clearTimeout(timer);
          resolve(p);
        },
      });
    });
  }

  /** Replays a push as the SDK does: load every stored step, then run the scripted workflow. */
  private async handle(push: Push, script: Script) {
    const id = push.body.execution_id;
    const res = await this.call("GET", `/internal/executions/${id}/steps`);
    // The run is no longer this worker's (cancelled or moved on since the push): the SDK drops it.
    if (!res.ok) return;
    const { steps } = (await res.json()) as { steps: StoredStep[] };
    const ctx: PushContext = {
      push: push.body,
      steps: new Map(steps.map((s) => [s.step_key, s])),
      topic: `workflow/${push.body.root_workflow_id}/${push.body.root_execution_id}`,
      call: (method, path, body) => this.call(method, path, body),
      saveStep: (stepKey, outputs, success = true, error) =>
        this.call("POST", `/internal/executions/${id}/steps`, {
          step_key: stepKey,
          ...(outputs !== undefined ? { outputs } : {}),
          success,
          ...(error ? { error: { message: error } } : {}),
        }),
      wait: (body) => this.call("POST", `/internal/executions/${id}/wait`, body),
      complete: (result) =>
        this.call("POST", `/internal/executions/${id}/complete`, { result, worker_id: this.workerId }),
      fail: (error, retryable) =>
        this.call("POST", `/internal/executions/${id}/fail`, { error, worker_id: this.workerId, retryable }),
    };
    await script(ctx);
  }

  async close() {
    await Promise.allSettled([...this.running]);
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
