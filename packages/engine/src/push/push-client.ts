import type { Worker } from "@spool/db";
import { type PushRequest, SIGNATURE_HEADER, signPush } from "@spool/shared";
import { type HttpAnswer, httpRequest, succeeded } from "../util/http-json.js";

/** How a push worker answered. */
export type PushOutcome =
  | { kind: "accepted" }
  /** 429: at capacity. */
  | { kind: "busy" }
  /** 400 "Worker ID mismatch": the process at that URL re-registered under another id. */
  | { kind: "mismatch" }
  /** Anything else: a 5xx, another 4xx, a timeout, a refused connection. */
  | { kind: "failed"; reason: string };

export type PushTarget = Pick<Worker, "id" | "pushEndpointUrl" | "pushSecret">;

const endpoint = (worker: PushTarget, path: string) =>
  new URL(
    path,
    worker.pushEndpointUrl!.endsWith("/") ? worker.pushEndpointUrl! : `${worker.pushEndpointUrl}/`,
  );

/** Posts a JSON body to the worker, signed with its secret, within `timeoutMs`. */
function post(worker: PushTarget, path: string, body: unknown, timeoutMs: number): Promise<HttpAnswer> {
  const text = JSON.stringify(body);
  return httpRequest(endpoint(worker, path), {
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

/** `POST {push_endpoint_url}/execute`: hands the run to the worker, which runs it in the background. */
export async function sendPush(
  worker: PushTarget,
  body: PushRequest,
  timeoutMs: number,
): Promise<PushOutcome> {
  try {
    const res = await post(worker, "execute", body, timeoutMs);
    const answer = res.text;
    if (succeeded(res)) return { kind: "accepted" };
    if (res.status === 429) return { kind: "busy" };
    if (res.status === 400 && /worker id mismatch/i.test(answer)) return { kind: "mismatch" };
    return { kind: "failed", reason: `HTTP ${res.status} ${answer.slice(0, 200)}` };
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return { kind: "failed", reason: `${err instanceof Error ? err.message : String(err)}${cause}` };
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
    const res = await post(worker, `cancel/${encodeURIComponent(executionId)}`, body, timeoutMs);
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
