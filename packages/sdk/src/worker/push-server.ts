// The HTTP endpoint Spool pushes runs to (spec/worker-protocol.md §2). node:http keeps a remote
// worker's dependencies to the SDK's own.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  MAX_PUSHES_PER_BATCH,
  type PushBatchRequest,
  type PushRequest,
  SIGNATURE_HEADER,
  verifyPushSignature,
} from "@spool/shared";

export interface PushServerHandlers {
  /** The worker's current id (it changes when the worker re-registers). */
  workerId(): string | null;
  /** The key pushes are signed with; null accepts unsigned pushes (verification off). */
  secret(): string | null;
  /** Runs that fit now. */
  hasRoom(): boolean;
  /** This very push (same run, same claim) is running here already: a copy sent again. */
  running(push: PushRequest): boolean;
  /** Starts the run in the background; answered 200 at once. */
  accept(push: PushRequest): void;
  /** Stops a run this worker is running; false when it runs no such run. */
  cancel(executionId: string): boolean;
  health(): Record<string, unknown>;
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;

function reply(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error("push body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function isPush(value: unknown): value is PushRequest {
  const p = value as Partial<PushRequest> | null;
  return (
    typeof p?.execution_id === "string" &&
    typeof p.workflow_id === "string" &&
    typeof p.worker_id === "string"
  );
}

/** What `/execute` answers a push (parsed JSON): the status and its body. */
function admit(h: PushServerHandlers, body: unknown): [number, Record<string, unknown>] {
  if (!isPush(body))
    return [400, { error: "not a push: execution_id, workflow_id and worker_id are required" }];
  if (body.worker_id !== h.workerId()) return [400, { error: "Worker ID mismatch" }];
  // Taken already (a proxy sent it again, say): the run must not start twice, and a 429 would make
  // Spool give the run to another worker while this one runs it.
  if (h.running(body)) return [200, { status: "accepted", execution_id: body.execution_id }];
  if (!h.hasRoom()) return [429, { error: "Worker at capacity" }];
  h.accept(body);
  return [200, { status: "accepted", execution_id: body.execution_id }];
}

/** A signed JSON body of a POST, parsed; otherwise answered (400, 401) and undefined. */
async function signedJson(h: PushServerHandlers, req: IncomingMessage, res: ServerResponse) {
  if (!/^application\/json\b/i.test(req.headers["content-type"] ?? "")) {
    reply(res, 400, { error: "Content-Type must be application/json" });
    return undefined;
  }
  const text = await readBody(req);
  if (!signedBySpool(h, req, text)) {
    reply(res, 401, { error: "invalid or missing push signature" });
    return undefined;
  }
  try {
    return { body: JSON.parse(text) as unknown };
  } catch {
    reply(res, 400, { error: "malformed JSON" });
    return undefined;
  }
}

/**
 * `POST /execute`, `POST /cancel/{execution_id}` and `GET /health`, as the protocol has them, and
 * Spool's `POST /execute-batch`: several pushes, each admitted as `/execute` would, in order.
 */
export function createPushServer(h: PushServerHandlers): Server {
  return createServer((req, res) => {
    void route(h, req, res).catch((err) => {
      if (!res.headersSent) reply(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  });
}

async function route(h: PushServerHandlers, req: IncomingMessage, res: ServerResponse) {
  const path = new URL(req.url ?? "/", "http://worker").pathname;
  if (req.method === "GET" && path === "/health") return reply(res, 200, h.health());
  if (req.method === "POST" && path === "/execute") {
    const parsed = await signedJson(h, req, res);
    if (!parsed) return;
    const [status, body] = admit(h, parsed.body);
    return reply(res, status, body);
  }
  if (req.method === "POST" && path === "/execute-batch") {
    const parsed = await signedJson(h, req, res);
    if (!parsed) return;
    const pushes: unknown = (parsed.body as Partial<PushBatchRequest> | null)?.pushes;
    if (!Array.isArray(pushes) || pushes.length === 0 || pushes.length > MAX_PUSHES_PER_BATCH) {
      return reply(res, 400, { error: `pushes: an array of 1 to ${MAX_PUSHES_PER_BATCH} pushes` });
    }
    // Each push's answer as `/execute` would give it, its HTTP status as `status` (over the body's own).
    const results = pushes.map((push) => {
      const [status, body] = admit(h, push);
      return { ...body, status };
    });
    return reply(res, 200, { results });
  }
  const cancel = req.method === "POST" ? /^\/cancel\/([^/]+)$/.exec(path) : null;
  if (cancel) {
    const text = await readBody(req);
    if (!signedBySpool(h, req, text)) return reply(res, 401, { error: "invalid or missing push signature" });
    // The signature covers the body only: a verified cancel must name the run of its path.
    if (h.secret() && bodyExecutionId(text) !== decodeURIComponent(cancel[1]!)) {
      return reply(res, 401, { error: "the signed cancel names another execution" });
    }
    const workerId = req.headers["x-worker-id"];
    if (!workerId) return reply(res, 400, { error: "Missing Worker ID in request headers" });
    if (workerId !== h.workerId()) return reply(res, 400, { error: "Worker ID mismatch" });
    const executionId = decodeURIComponent(cancel[1]!);
    return h.cancel(executionId)
      ? reply(res, 200, { status: "cancellation_requested", execution_id: executionId })
      : reply(res, 404, { error: "Execution not found or already completed", execution_id: executionId });
  }
  return reply(res, 404, { error: `no route for ${req.method} ${path}` });
}

function bodyExecutionId(text: string): unknown {
  try {
    return (JSON.parse(text) as { execution_id?: unknown }).execution_id;
  } catch {
    return undefined;
  }
}

/** Whether Spool signed this request (always true while verification is off). */
function signedBySpool(h: PushServerHandlers, req: IncomingMessage, body: string): boolean {
  const secret = h.secret();
  const signature = req.headers[SIGNATURE_HEADER];
  return !secret || verifyPushSignature(secret, body, Array.isArray(signature) ? signature[0] : signature);
}

/** Listens on `port` (0: any free port) and resolves with the port taken. */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
