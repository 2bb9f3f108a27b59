// How a remote worker talks to Spool: JSON over HTTP with the project's API key. Every worker-facing
// write is idempotent on the server, so a call whose answer was lost is simply made again.
import { httpRequest, succeeded } from "../util/http-json.js";

export interface ProtocolClientOptions {
  apiUrl: string;
  apiKey: string;
  projectId: string;
  /** How long a call keeps being retried while Spool is unreachable or answers 5xx/429. */
  retryForMs?: number;
  /** Longest wait for one answer. */
  timeoutMs?: number;
  /** Told about each failed try that will be retried. */
  onRetry?: (err: unknown, path: string) => void;
}

/** Spool answered with a 4xx (other than 429): retrying the same call cannot help. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
    /** The error body's `details`, when it has any. */
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export type ProtocolClient = ReturnType<typeof createProtocolClient>;

/** What a call may do about an answer it did not want: retryNotFound, see ProtocolClient.request. */
export interface RetryOptions {
  retryNotFound?: () => boolean;
}

/**
 * Whether an answer with this status is worth the same call again: Spool or its database was away
 * (5xx), it asked for a pause (429), or (while `retry.retryNotFound()` holds) the run is not in yet.
 */
export const isRetryable = (status: number, retry: RetryOptions = {}) =>
  status >= 500 || status === 429 || (status === 404 && retry.retryNotFound?.() === true);

/** A body already serialized as JSON: sent as it is, not serialized again. */
export class RawJson {
  constructor(readonly text: string) {}
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A body as JSON; null when empty or not JSON (a proxy's error page, say: the status tells). */
function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

export function createProtocolClient(o: ProtocolClientOptions) {
  const base = o.apiUrl.replace(/\/+$/, "");
  const retryForMs = o.retryForMs ?? 120_000;

  async function once(method: string, path: string, body: unknown, headers: Record<string, string>) {
    const res = await httpRequest(new URL(`${base}${path}`), {
      method,
      headers: {
        authorization: `Bearer ${o.apiKey}`,
        "x-project-id": o.projectId,
        "content-type": "application/json",
        ...headers,
      },
      body: body === undefined ? undefined : body instanceof RawJson ? body.text : JSON.stringify(body),
      timeoutMs: o.timeoutMs ?? 30_000,
      // Every worker route is idempotent: a call the server never saw is simply sent again.
      retryIfReset: true,
    });
    return { res, parsed: parseJson(res.text) };
  }

  /**
   * A call to `path` (from the server root, e.g. `/api/v1/workers/register`). Network errors, 5xx
   * and 429 are retried with backoff for `retryForMs`; a 4xx throws ProtocolError at once, but a 404
   * is retried too while `retryNotFound()` holds (a run pushed before its insert committed, asked
   * about on a Spool that does not wait for it).
   */
  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    retry: RetryOptions = {},
  ): Promise<T> {
    const final = (err: unknown) => err instanceof ProtocolError && !isRetryable(err.status, retry);
    const deadline = Date.now() + retryForMs;
    for (let attempt = 0; ; attempt++) {
      let failure: unknown;
      try {
        const { res, parsed } = await once(method, path, body, headers);
        if (succeeded(res)) return parsed as T;
        const e = (parsed ?? {}) as { error?: string; error_type?: string; details?: unknown };
        const redirect = res.status >= 300 && res.status < 400;
        const error = new ProtocolError(
          res.status,
          e.error_type ?? (redirect ? "REDIRECT" : "UNKNOWN"),
          redirect
            ? `${base} answered HTTP ${res.status}, a redirect, which is not followed: set apiUrl to the address it redirects to`
            : (e.error ?? res.statusText),
          e.details,
        );
        if (final(error)) throw error;
        failure = error;
      } catch (err) {
        if (final(err)) throw err;
        failure = err;
      }
      const wait = Math.min(8000, 250 * 2 ** attempt);
      if (Date.now() + wait > deadline) throw failure;
      o.onRetry?.(failure, path);
      await pause(wait);
    }
  }

  return { request, apiUrl: base, projectId: o.projectId };
}
