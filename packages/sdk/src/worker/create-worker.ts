import type { Server } from "node:http";
import { hostname } from "node:os";
import {
  createHttpHost,
  createProtocolClient,
  createReporter,
  type ProtocolClient,
  ProtocolError,
  processRun,
  type RunHost,
  type RunnerLogger,
} from "@spool/engine/runner";
import { createLogger, isFirstStartClaim, type PushRequest, runTopic } from "@spool/shared";
import { collectDefinitions, type Definitions } from "./definitions.js";
import { createPushServer, listen } from "./push-server.js";
import {
  type ApiRequest,
  capabilitiesOf,
  registerDeclared,
  registerDefinitions,
  startHeartbeat,
} from "./registration.js";

export interface WorkerOptions {
  /** Spool's base URL, e.g. `https://spool.example.com` (the API is under `/api/v1`). */
  apiUrl: string;
  /** A project API key (`sk_...`): all a remote worker needs. */
  apiKey: string;
  projectId: string;
  /** The workflows, agents, tools and queues to serve (a list, or a module's exports). */
  workflows: unknown[] | Record<string, unknown>;
  /** Port the push endpoint listens on (default 0: any free port). */
  port?: number;
  /** Address it listens on (default 0.0.0.0). */
  host?: string;
  /**
   * The URL Spool pushes to: set it behind a proxy or NAT. Default `http://<host>:<port>`, with the
   * machine's hostname when listening on every address.
   */
  pushUrl?: string;
  /** The deployment (a version of this code) the worker registers under (default "default"). */
  deploymentId?: string;
  /** Runs this worker runs at once (default 10); Spool pushes no more. */
  maxConcurrentExecutions?: number;
  /** Heartbeat interval (default 10 s); Spool takes the worker offline after 3 missed beats. */
  heartbeatIntervalSeconds?: number;
  /** Check Spool's signature on every push (default true). */
  verifySignatures?: boolean;
  /**
   * On SIGTERM/SIGINT: stop (handing running runs back), then exit the process, as those signals
   * would without a handler (default true).
   */
  handleSignals?: boolean;
  /** How long `stop()` waits for the runs it handed back to end their current step (default 10 s). */
  stopTimeoutMs?: number;
  logger?: RunnerLogger;
}

export interface RemoteWorker {
  /** The id Spool gave this worker (changes if it has to re-register). */
  readonly workerId: string;
  /** Where Spool pushes runs. */
  readonly pushUrl: string;
  /** Runs in progress. */
  readonly running: number;
  /**
   * Stops taking runs, hands the running ones back to their queues (another worker replays them;
   * their stored steps are not run again) and stops heartbeating.
   */
  stop(): Promise<void>;
}

interface Running {
  /** The claim of the push it runs under (Spool's), if the push carried one. */
  claim: string | undefined;
  /** Why the worker stopped the run: Spool cancelled it, or the worker is shutting down. */
  stopped: "cancelled" | "handed_back" | null;
  /**
   * Its outcome (completion, failure, wait) is on its way to Spool: its code has returned, so it no
   * longer takes a slot. Spool counts the run as gone once it stored the outcome, and may push the
   * next run before this worker has the answer.
   */
  reporting: boolean;
  done: Promise<unknown>;
}

/**
 * Starts a remote worker: an HTTP endpoint Spool pushes runs to, registered with Spool through its
 * API, that runs the same `defineWorkflow`/`defineAgent`/`defineTool` definitions as an in-cluster
 * worker with the same job runner. It needs nothing but the API URL, a project key and the project
 * id: no database, no Redis. Resolves once registered and reachable.
 *
 * ```ts
 * const worker = await createWorker({
 *   apiUrl: process.env.SPOOL_API_URL!, apiKey: process.env.SPOOL_API_KEY!,
 *   projectId: process.env.SPOOL_PROJECT_ID!, workflows: [orderWorkflow], port: 8000,
 * });
 * ```
 */
export async function createWorker(options: WorkerOptions): Promise<RemoteWorker> {
  const logger = options.logger ?? createLogger("spool-worker");
  const definitions: Definitions = collectDefinitions(
    Array.isArray(options.workflows) ? options.workflows : Object.values(options.workflows),
    "createWorker({ workflows })",
  );
  const deploymentId = options.deploymentId ?? "default";
  const maxConcurrent = options.maxConcurrentExecutions ?? 10;
  const heartbeatSeconds = options.heartbeatIntervalSeconds ?? 10;
  const api = createProtocolClient({
    apiUrl: options.apiUrl,
    apiKey: options.apiKey,
    projectId: options.projectId,
    onRetry: (err, path) => logger.warn({ err: String(err), path }, "Spool unreachable; retrying"),
  });
  const rest: ApiRequest = (method, path, body) => api.request(method, `/api/v1${path}`, body);
  // Calls that must not wait minutes for an API that is gone: heartbeats (the next one is due soon
  // anyway) and the goodbyes of a worker shutting down (what it cannot tell Spool now, its missed
  // heartbeats will: Spool then gives its runs to other workers).
  const quick = createProtocolClient({
    apiUrl: options.apiUrl,
    apiKey: options.apiKey,
    projectId: options.projectId,
    retryForMs: 3000,
    timeoutMs: 3000,
  });
  // Every run's step writes and completions: batched while earlier ones are on their way.
  const reporter = createReporter({ api, workerId: () => workerId ?? "" });
  const runs = new Map<string, Running>();
  /** Runs that take a slot: all but those reporting their outcome. */
  const runningCode = () => {
    let n = 0;
    for (const r of runs.values()) if (!r.reporting) n++;
    return n;
  };
  let workerId: string | null = null;
  let secret: string | null = null;
  let stopping = false;

  const server: Server = createPushServer({
    workerId: () => workerId,
    secret: () => (options.verifySignatures === false ? null : secret),
    hasRoom: () => !stopping && runningCode() < maxConcurrent,
    running: (push) => {
      const claim = runs.get(push.execution_id)?.claim;
      const again = claim !== undefined && claim === push.spool_claim;
      if (again)
        logger.warn(
          { execution_id: push.execution_id },
          "the same push again; the run is running here already",
        );
      return again;
    },
    accept: (push) => runs.set(push.execution_id, run(push)),
    cancel: (executionId) => {
      const r = runs.get(executionId);
      if (!r) return false;
      r.stopped ??= "cancelled";
      // Its current step runs to its end; nothing after it is stored.
      logger.info({ execution_id: executionId }, "run cancelled by Spool; stopping it");
      return true;
    },
    health: () => ({
      status: stopping ? "stopping" : "healthy",
      mode: "push",
      current_executions: runs.size,
      max_concurrent_workflows: maxConcurrent,
    }),
  });
  const port = await listen(server, options.port ?? 0, options.host ?? "0.0.0.0");
  const listenHost = options.host ?? "0.0.0.0";
  const reachableAs = listenHost === "0.0.0.0" || listenHost === "::" ? hostname() : listenHost;
  const pushUrl =
    options.pushUrl ?? `http://${reachableAs.includes(":") ? `[${reachableAs}]` : reachableAs}:${port}`;

  /** One pushed run, through the engine's job runner against the API. */
  function run(push: PushRequest): Running {
    const state: Running = {
      claim: push.spool_claim,
      stopped: null,
      reporting: false,
      done: Promise.resolve(),
    };
    const log = logger.child({ execution_id: push.execution_id, workflow_id: push.workflow_id });
    const reported =
      <A extends unknown[], R>(verb: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        state.reporting = true;
        try {
          return await verb(...args);
        } catch (err) {
          // Not taken (a superseded last step is replayed, say): the run goes on here.
          state.reporting = false;
          throw err;
        }
      };
    const httpHost = createHttpHost({
      api,
      push,
      workerId: () => workerId ?? push.worker_id,
      cancelled: () => state.stopped !== null,
      onError: (err, what) => log.warn({ err: String(err) }, what),
      reporter,
    });
    const host: RunHost = {
      ...httpHost,
      complete: reported(httpHost.complete),
      fail: reported(httpHost.fail),
      block: reported(httpHost.block),
    };
    state.done = processRun({ host, workflows: definitions.workflows, logger: log })
      .then(async () => {
        // Spool cancelled it: say so on the run's stream and confirm.
        if (state.stopped === "cancelled") await confirmStopped(api, push, log, true);
      })
      .catch(async (err) => {
        // Still not found after the client's retries, under a first start's claim: the run may yet be
        // inserted (it was pushed before its insert). Handed back, it is then run again from its
        // queue; failed, it would end for good though nothing was refused.
        const notInYet =
          err instanceof ProtocolError && err.status === 404 && isFirstStartClaim(push.spool_claim);
        if (err instanceof ProtocolError && err.status < 500 && err.status !== 429 && !notInYet) {
          // Spool refused what the run reported (say, a step result over its size limit): another
          // worker would be refused the same after running the step again. The run fails instead.
          log.error(
            { err: err.message, status: err.status },
            "Spool refused a report of the run; failing it",
          );
          await failRefused(api, push, log, err);
          return;
        }
        // Spool stayed out of reach (or answered nonsense): give the run back rather than hold it.
        log.error({ err: String(err) }, "run could not be reported; handing it back");
        await confirmStopped(api, push, log, false);
      })
      .finally(() => {
        // A later push of the same run (after a hand-back) may have taken the entry meanwhile.
        if (runs.get(push.execution_id) === state) runs.delete(push.execution_id);
      });
    return state;
  }

  async function register() {
    const registered = await rest<{ worker_id: string; push_secret: string | null }>(
      "POST",
      "/workers/register",
      {
        deployment_id: deploymentId,
        mode: "push",
        push_endpoint_url: pushUrl,
        hostname: hostname(),
        max_concurrent_executions: maxConcurrent,
        heartbeat_interval_seconds: heartbeatSeconds,
        capabilities: capabilitiesOf(definitions),
      },
    );
    // From here on pushes may arrive for this id (the endpoint is listening already).
    secret = registered.push_secret;
    workerId = registered.worker_id;
    await registerDefinitions(rest, { deploymentId, definitions });
    await rest("POST", `/workers/${registered.worker_id}/online`);
  }

  try {
    await register();
    await registerDeclared(rest, { deploymentId, definitions, logger });
  } catch (err) {
    server.close();
    throw err;
  }
  logger.info(
    { worker_id: workerId, push_url: pushUrl, workflows: [...definitions.workflows.keys()] },
    "registered",
  );

  const stopHeartbeat = startHeartbeat({
    request: (method, path, body) => quick.request(method, `/api/v1${path}`, body),
    logger,
    intervalSeconds: heartbeatSeconds,
    workerId: () => workerId!,
    running: () => runs.size,
    reRegister: register,
  });

  const onSignal = () => void worker.stop().finally(() => process.exit(0));
  const worker: RemoteWorker = {
    get workerId() {
      return workerId!;
    },
    pushUrl,
    get running() {
      return runs.size;
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      process.off("SIGTERM", onSignal).off("SIGINT", onSignal);
      stopHeartbeat();
      // Every run still going goes back to its queue at once (its next write here is refused).
      await Promise.allSettled(
        [...runs.entries()].map(async ([id, r]) => {
          r.stopped ??= "handed_back";
          const path = `/internal/executions/${encodeURIComponent(id)}/confirm-cancellation`;
          await quick
            .request("POST", path, { worker_id: workerId }, { "x-worker-id": workerId! })
            .catch(() => {});
        }),
      );
      // Their steps may still be running (they are refused at their next write); wait a bounded time.
      await Promise.race([
        Promise.allSettled([...runs.values()].map((r) => r.done)),
        new Promise((resolve) => setTimeout(resolve, options.stopTimeoutMs ?? 10_000).unref()),
      ]);
      await quick.request("POST", `/api/v1/workers/${workerId}/deregister`).catch(() => {});
      await new Promise<void>((resolve) => server.close(() => resolve()));
      logger.info({ worker_id: workerId }, "stopped");
    },
  };
  if (options.handleSignals !== false) process.once("SIGTERM", onSignal).once("SIGINT", onSignal);
  return worker;
}

/** Fails a run whose report Spool refused, for good: retrying would run its steps again. */
async function failRefused(api: ProtocolClient, push: PushRequest, log: RunnerLogger, err: ProtocolError) {
  try {
    await api.request(
      "POST",
      `/internal/executions/${encodeURIComponent(push.execution_id)}/fail`,
      {
        error: {
          name: "ReportRefusedError",
          message: `Spool refused a report of this run (HTTP ${err.status} ${err.errorType}): ${err.message}`,
          non_retryable: true,
        },
        worker_id: push.worker_id,
        retryable: false,
      },
      { "x-worker-id": push.worker_id, "x-spool-claim": push.spool_claim },
    );
  } catch (failErr) {
    log.warn({ err: String(failErr) }, "could not fail the run");
  }
}

/**
 * The worker stopped a run: it tells the run's stream (`workflow_cancel`, when Spool cancelled it)
 * and confirms. For a run nobody cancelled, the confirmation hands it back to its queue.
 */
async function confirmStopped(api: ProtocolClient, push: PushRequest, log: RunnerLogger, cancelled: boolean) {
  const id = encodeURIComponent(push.execution_id);
  try {
    if (cancelled) {
      await api.request("POST", "/api/v1/events/publish", {
        topic: runTopic(push.workflow_id, push.execution_id),
        events: [{ event_type: "workflow_cancel", data: { execution_id: push.execution_id } }],
      });
    }
    await api.request(
      "POST",
      `/internal/executions/${id}/confirm-cancellation`,
      { worker_id: push.worker_id },
      {
        "x-worker-id": push.worker_id,
        "x-spool-claim": push.spool_claim,
      },
    );
  } catch (err) {
    log.warn({ err: String(err) }, "could not confirm the stop");
  }
}
