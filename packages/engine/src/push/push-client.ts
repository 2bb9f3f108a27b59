import type { Worker } from "@spool/db";
import {
  MAX_PUSHES_PER_BATCH,
  type PushBatchResponse,
  type PushRequest,
  SIGNATURE_HEADER,
  signPush,
} from "@spool/shared";
import { type HttpAnswer, httpRequest, succeeded } from "../util/http-json.js";
import { InFlightBatches } from "../util/in-flight-batches.js";
import type { WorkerCapabilities } from "../workers/workers.js";

/** How a push worker answered. */
export type PushOutcome =
  | { kind: "accepted" }
  /** 429: at capacity. */
  | { kind: "busy" }
  /** 400 "Worker ID mismatch": the process at that URL re-registered under another id. */
  | { kind: "mismatch" }
  /**
   * Anything else: a 5xx, another 4xx, a timeout, a refused connection. `request`: the one request
   * several pushes failed with together (a batch), so that its failure is counted once.
   */
  | { kind: "failed"; reason: string; request?: object };

export type PushTarget = Pick<Worker, "id" | "pushEndpointUrl" | "pushSecret">;

const endpoint = (worker: PushTarget, path: string) =>
  new URL(
    path,
    worker.pushEndpointUrl!.endsWith("/") ? worker.pushEndpointUrl! : `${worker.pushEndpointUrl}/`,
  );

/**
 * Posts a JSON body (its text) to the worker, signed with its secret, within `timeoutMs`.
 * `retryIfReset`: only where the worker takes the same request twice as once (see httpRequest).
 */
function post(
  worker: PushTarget,
  path: string,
  text: string,
  timeoutMs: number,
  retryIfReset = false,
): Promise<HttpAnswer> {
  return httpRequest(endpoint(worker, path), {
    retryIfReset,
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-worker-id": worker.id,
      ...(worker.pushSecret ? { [SIGNATURE_HEADER]: signPush(worker.pushSecret, text) } : {}),
    },
    body: text,
    timeoutMs,
  });
}

/** What a push's answer (its status and body as text) says. */
function outcomeOf(status: number, answer: string): PushOutcome {
  if (status >= 200 && status < 300) return { kind: "accepted" };
  if (status === 429) return { kind: "busy" };
  if (status === 400 && /worker id mismatch/i.test(answer)) return { kind: "mismatch" };
  return { kind: "failed", reason: `HTTP ${status} ${answer.slice(0, 200)}` };
}

/** A push that got no answer (a timeout, a refused connection). */
function unanswered(err: unknown): PushOutcome {
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return { kind: "failed", reason: `${err instanceof Error ? err.message : String(err)}${cause}` };
}

/** `POST {push_endpoint_url}/execute` of a push (as JSON): the worker runs it in the background. */
async function sendPush(worker: PushTarget, json: string, timeoutMs: number): Promise<PushOutcome> {
  try {
    const res = await post(worker, "execute", json, timeoutMs);
    return outcomeOf(res.status, res.text);
  } catch (err) {
    return unanswered(err);
  }
}

/** Pushes to one worker at once: a slow answer holds up no push behind the other. */
const MAX_PUSHES_IN_FLIGHT = 2;
/**
 * A push longer than this (in characters of JSON: a long journal) goes alone, and a batch holds at
 * most BATCH_CHARS of them: well under the SDK's 10 MiB body limit however many bytes a character
 * takes in UTF-8.
 */
const MAX_BATCHED_CHARS = 64 * 1024;
const BATCH_CHARS = 1024 * 1024;

interface QueuedPush {
  worker: PushTarget;
  /** The push as JSON, serialized once. */
  json: string;
  /** When its timeout, counted from send(), ends (performance.now()): time queued counts too. */
  deadline: number;
  /** Settles the push once (see settle). */
  resolve: (outcome: PushOutcome) => void;
  settled?: boolean;
}

/** The push's outcome; the first one given counts (its result, or its timer's failure). */
function settle(p: QueuedPush, outcome: PushOutcome): void {
  if (p.settled) return;
  p.settled = true;
  p.resolve(outcome);
}

/** A push whose timeout passed while it waited behind unanswered ones: never sent. */
const EXPIRED_IN_QUEUE: PushOutcome = {
  kind: "failed",
  reason: "its timeout passed while earlier pushes were unanswered",
};
/** A push of a batch whose answer had not come by the end of its own timeout. */
const UNANSWERED_IN_BATCH: PushOutcome = {
  kind: "failed",
  reason: "no answer within its timeout (sent in a batch)",
};

/** How many of the waiting pushes (from the first) the next batch takes: within both caps. */
function batchOfWaiting(waiting: readonly QueuedPush[]): number {
  let chars = 0;
  let n = 0;
  while (n < waiting.length && n < MAX_PUSHES_PER_BATCH) {
    chars += (waiting[n] as QueuedPush).json.length;
    if (n > 0 && chars > BATCH_CHARS) break;
    n++;
  }
  return n;
}

/**
 * Sends pushes. To a worker that takes them in batches (capabilities.spool_push_batches, Spool's
 * SDK), as that SDK sends a busy worker's reports (runner/reporter.ts): pushes made while two
 * earlier ones to the worker are unanswered wait for one of them and then leave together, as one
 * `POST …/execute-batch`. An idle worker's push leaves at once; a busy one costs both ends a request
 * per batch instead of one per run. Each push still has its own outcome, what `/execute` would
 * have answered it, by the end of its own timeout. Other workers get each push alone, and so does a
 * worker whose address answered that it has no batch route.
 */
export class PushSender {
  private readonly byWorker = new Map<string, InFlightBatches<QueuedPush>>();
  /** Workers whose address answered a batch 404 or 405 (an older process there). */
  private readonly withoutBatchRoute = new Set<string>();

  async send(
    worker: PushTarget & { capabilities?: unknown },
    body: PushRequest,
    timeoutMs: number,
  ): Promise<PushOutcome> {
    const json = JSON.stringify(body);
    const batches =
      (worker.capabilities as WorkerCapabilities | null | undefined)?.spool_push_batches === true &&
      !this.withoutBatchRoute.has(worker.id);
    if (!batches || json.length > MAX_BATCHED_CHARS) return sendPush(worker, json, timeoutMs);
    return new Promise((resolve) => {
      let lane = this.byWorker.get(worker.id);
      if (!lane) {
        lane = new InFlightBatches<QueuedPush>({
          maxInFlight: MAX_PUSHES_IN_FLIGHT,
          nextBatchSize: batchOfWaiting,
          alone,
          together: (batch) => this.together(batch),
          onIdle: () => this.byWorker.delete(worker.id),
        });
        this.byWorker.set(worker.id, lane);
      }
      lane.add({ worker, json, deadline: performance.now() + timeoutMs, resolve });
    });
  }

  /**
   * One `POST …/execute-batch` for the pushes, each settled by its result, or failed at its own
   * deadline if that comes first (the request lasts until the last one's). A worker without the
   * route (404, 405) gets each alone, from now on; any other failure of the whole request is each
   * push's, as if each had met it alone, and counted once (`request`).
   */
  private async together(queued: QueuedPush[]): Promise<void> {
    const now = performance.now();
    const batch: QueuedPush[] = [];
    for (const p of queued) {
      if (p.deadline > now) batch.push(p);
      else settle(p, EXPIRED_IN_QUEUE);
    }
    if (batch.length <= 1) {
      if (batch[0]) await alone(batch[0]);
      return;
    }
    const timers = batch.map((p) => setTimeout(() => settle(p, UNANSWERED_IN_BATCH), p.deadline - now));
    try {
      const first = batch[0] as QueuedPush;
      const text = `{"pushes":[${batch.map((p) => p.json).join(",")}]}`;
      const last = Math.max(...batch.map((p) => p.deadline));
      let res: HttpAnswer;
      try {
        // The worker admits a push it runs already under the same claim as taken, so a batch sent
        // again on a fresh connection after a reset one starts nothing twice.
        res = await post(first.worker, "execute-batch", text, last - now, true);
      } catch (err) {
        const failed = { ...unanswered(err), request: batch };
        for (const p of batch) settle(p, failed);
        return;
      }
      if (res.status === 404 || res.status === 405) {
        this.withoutBatchRoute.add(first.worker.id);
        await Promise.all(batch.filter((p) => !p.settled).map(alone));
        return;
      }
      const results = succeeded(res) ? resultsOf(res.text) : undefined;
      if (results?.length !== batch.length) {
        // A 2xx without a result per push says no more than a 5xx: not taken, as far as Spool can tell.
        const failed = succeeded(res)
          ? {
              kind: "failed" as const,
              reason: `a batch answer without a result per push: ${res.text.slice(0, 200)}`,
            }
          : outcomeOf(res.status, res.text);
        for (const p of batch) settle(p, failed.kind === "failed" ? { ...failed, request: batch } : failed);
        return;
      }
      batch.forEach((p, i) => {
        const result = results[i];
        settle(p, outcomeOf(Number(result?.status), JSON.stringify(result ?? null)));
      });
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
  }
}

async function alone(p: QueuedPush): Promise<void> {
  const left = p.deadline - performance.now();
  settle(p, left > 0 ? await sendPush(p.worker, p.json, left) : EXPIRED_IN_QUEUE);
}

function resultsOf(text: string): PushBatchResponse["results"] | undefined {
  try {
    const results = (JSON.parse(text) as Partial<PushBatchResponse> | null)?.results;
    return Array.isArray(results) ? results : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Waits before each new try of a cancel the worker did not answer, or answered 5xx or 429; each is
 * spread over half to one and a half times this, so that the cancels of many runs sent together
 * do not come back together.
 */
const CANCEL_RETRY_DELAYS_MS = [500, 2000, 8000];

/** One cancel: heard (2xx), refused for good (404: it runs no such run; another 4xx), or worth another try. */
async function cancelOnce(
  worker: PushTarget,
  executionId: string,
  timeoutMs: number,
): Promise<"heard" | "refused" | "again"> {
  try {
    // The body names the run too, so the signature binds the cancel to it.
    const body = { execution_id: executionId };
    const res = await post(
      worker,
      `cancel/${encodeURIComponent(executionId)}`,
      JSON.stringify(body),
      timeoutMs,
    );
    if (succeeded(res)) return "heard";
    return res.status >= 500 || res.status === 429 ? "again" : "refused";
  } catch {
    return "again";
  }
}

/**
 * `POST {push_endpoint_url}/cancel/{id}`: tells the worker to stop a run; true when it answered 2xx.
 * A try the worker did not answer (or answered 5xx or 429) is made again a few times in the
 * background (its waits keep no process alive): a worker that never hears it runs the run on, until
 * its next call is refused as no longer its own, or (a run whose insert failed) until its client
 * stops retrying the 404s.
 */
export async function sendCancel(
  worker: PushTarget,
  executionId: string,
  timeoutMs: number,
): Promise<boolean> {
  const first = await cancelOnce(worker, executionId, timeoutMs);
  if (first === "again") void tryAgainLater(worker, executionId, timeoutMs);
  return first === "heard";
}

async function tryAgainLater(worker: PushTarget, executionId: string, timeoutMs: number): Promise<void> {
  for (const ms of CANCEL_RETRY_DELAYS_MS) {
    await new Promise((resolve) => setTimeout(resolve, ms * (0.5 + Math.random())).unref());
    if ((await cancelOnce(worker, executionId, timeoutMs)) !== "again") return;
  }
}
