// The one client of the Spool API. Same origin, so the HttpOnly session cookie goes along by itself;
// every request names the project (X-Project-ID), which the API requires of cookie-authenticated
// writes (a cross-site form cannot add a header, so this is the CSRF guard).

/** An API failure, carrying the API's own `error` text (shown to the user as is). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly errorType?: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

let projectId: string | null = null;

/** The project every request names; set once the session (and, for the admin key, the pick) is known. */
export function setProjectId(id: string | null) {
  projectId = id;
}

type Query = Record<string, string | number | boolean | null | undefined>;

/** `/api/v1<path>?<query>`, leaving out empty values. */
export function apiUrl(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return `/api/v1${path}${qs ? `?${qs}` : ""}`;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  return { Accept: "application/json", ...(projectId ? { "X-Project-ID": projectId } : {}), ...extra };
}

async function failure(res: Response): Promise<ApiError> {
  const body = (await res.json().catch(() => null)) as {
    error?: unknown;
    error_type?: unknown;
    details?: unknown;
  } | null;
  const error =
    typeof body?.error === "string" ? body.error : `the API answered ${res.status} ${res.statusText}`.trim();
  return new ApiError(
    error + fieldProblems(body?.details),
    res.status,
    typeof body?.error_type === "string" ? body.error_type : undefined,
    body?.details,
  );
}

/** A 400's details name each refused field and why: worth showing beside the error itself. */
function fieldProblems(details: unknown): string {
  if (!Array.isArray(details)) return "";
  const lines = details.flatMap((d: { path?: unknown; message?: unknown }) =>
    typeof d?.message === "string" ? [`${typeof d.path === "string" ? `${d.path}: ` : ""}${d.message}`] : [],
  );
  return lines.length ? ` (${lines.join("; ")})` : "";
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { credentials: "same-origin", ...init });
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError(`could not reach the Spool API (${err instanceof Error ? err.message : err})`, 0);
  }
}

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  signal?: AbortSignal;
}

/** One JSON request; throws ApiError with the API's message on any non-2xx answer. */
export async function request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
  const res = await send(apiUrl(path, o.query), {
    method,
    headers: headers(o.body === undefined ? {} : { "Content-Type": "application/json" }),
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    signal: o.signal,
  });
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const get = <T>(path: string, query?: Query, signal?: AbortSignal) =>
  request<T>("GET", path, { query, signal });

/** One Server-Sent Event as the API sends it (`id:` is the event's sequence id). */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/**
 * Reads `GET /api/v1/events/stream` until `signal` aborts or the server ends the stream. fetch, not
 * EventSource: EventSource cannot send X-Project-ID.
 */
export async function readEventStream(
  query: Query,
  signal: AbortSignal,
  onMessage: (m: SseMessage) => void,
  onOpen?: () => void,
): Promise<void> {
  const res = await send(apiUrl("/events/stream", query), {
    headers: headers({ Accept: "text/event-stream" }),
    signal,
  });
  if (!res.ok || !res.body) throw await failure(res);
  onOpen?.();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let message: SseMessage = { data: "" };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line === "") {
          if (message.data !== "" || message.event) onMessage(message);
          message = { data: "" };
        } else if (line.startsWith("data:")) {
          message.data += (message.data ? "\n" : "") + line.slice(5).trimStart();
        } else if (line.startsWith("event:")) {
          message.event = line.slice(6).trim();
        } else if (line.startsWith("id:")) {
          message.id = line.slice(3).trim();
        }
        // Anything else is a comment (keep-alive) or `retry:`.
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A message for the user from anything thrown. */
export const errorText = (err: unknown): string =>
  err instanceof Error ? err.message : typeof err === "string" ? err : "something went wrong";
