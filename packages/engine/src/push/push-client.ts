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

/** `POST {push_endpoint_url}/cancel/{id}`: tells the worker to stop a run (best effort). */
export async function sendCancel(
  worker: PushTarget,
  executionId: string,
  timeoutMs: number,
): Promise<boolean> {
  try {
    // The body names the run too, so the signature binds the cancel to it.
    const body = { execution_id: executionId };
    return succeeded(await post(worker, `cancel/${encodeURIComponent(executionId)}`, body, timeoutMs));
  } catch {
    return false;
  }
}
