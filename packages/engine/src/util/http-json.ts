import http from "node:http";
import https from "node:https";

// The worker protocol's hot path: one small JSON request per push and per step report. Node's fetch
// (undici) spends ~0.3-0.6 ms more per such request than http.request on a keep-alive agent (a
// local micro-benchmark on the 2-core dev VM: 0.44-0.78 against 0.12-0.17 ms per round trip), so
// both ends of the protocol use this instead.

// An idle kept-alive connection is closed after 4 s (as undici's fetch does), before the usual 5 s
// of a Node server, and before a proxy or NAT that drops idle connections silently would.
const IDLE_MS = 4000;
const agents: Record<string, http.Agent> = {
  "http:": new http.Agent({ keepAlive: true, timeout: IDLE_MS }),
  "https:": new https.Agent({ keepAlive: true, timeout: IDLE_MS }),
};

export interface HttpAnswer {
  status: number;
  statusText: string;
  /** The body as text (empty when there is none). */
  text: string;
}

/** A 2xx answer. */
export const succeeded = (answer: HttpAnswer) => answer.status >= 200 && answer.status < 300;

export interface HttpRequest {
  method: string;
  headers: Record<string, string>;
  /** Sent as is (already JSON). */
  body?: string;
  /** Longest wait for the whole answer; the request fails after it. */
  timeoutMs: number;
  /**
   * Only for requests the server treats as idempotent: a kept-alive connection the server closed
   * just as it was reused (ECONNRESET on a reused socket, before any answer) is retried once on a
   * new one. A server behind a proxy may have acted on the request even so.
   */
  retryIfReset?: boolean;
}

/**
 * One request over a kept-alive connection. Rejects on network errors and timeouts; any status is
 * an answer (redirects are not followed).
 */
export async function httpRequest(url: URL, o: HttpRequest): Promise<HttpAnswer> {
  const agent = agents[url.protocol];
  if (!agent) throw new TypeError(`unsupported protocol ${url.protocol} in ${url.origin}`);
  const deadline = Date.now() + o.timeoutMs;
  try {
    return await once(url, o, agent, o.timeoutMs);
  } catch (err) {
    if (!(err instanceof ReusedSocketReset)) throw err;
    if (!o.retryIfReset) throw err.cause;
    const left = deadline - Date.now();
    if (left <= 0) throw timedOut(url, o);
    return once(url, o, agent, left);
  }
}

const timedOut = (url: URL, o: HttpRequest) =>
  new Error(`no answer from ${url.origin} within ${o.timeoutMs} ms`);

class ReusedSocketReset extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

// A timer cleared with the answer rather than AbortSignal.timeout, whose timer cannot be cleared: it
// fires after each request, building a DOMException (a stack trace) and dispatching an abort nobody
// needs, and the signal costs the request its abort wiring. A loop of small requests to a local
// server in the same process on the 2-core dev VM: 119–131 µs of CPU per request against 212–236.
function once(url: URL, o: HttpRequest, agent: http.Agent, timeoutMs: number): Promise<HttpAnswer> {
  const transport = url.protocol === "https:" ? https : http;
  const headers =
    o.body === undefined ? o.headers : { ...o.headers, "content-length": String(Buffer.byteLength(o.body)) };
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = transport.request(url, { method: o.method, headers, agent }, (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", text });
      });
      res.on("error", fail);
    });
    // Settles the request whatever its state (an answer half read included); what its destruction
    // reports afterwards changes nothing.
    const timer = setTimeout(() => {
      reject(timedOut(url, o));
      req.destroy();
    }, timeoutMs);
    function fail(err: NodeJS.ErrnoException) {
      clearTimeout(timer);
      if (!answered && req.reusedSocket && err.code === "ECONNRESET") reject(new ReusedSocketReset(err));
      else reject(err);
    }
    req.on("error", fail);
    req.end(o.body);
  });
}
