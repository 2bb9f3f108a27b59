import { SpoolApiError } from "@spool/sdk/client";

/** One Server-Sent Event as the API sends it. */
export interface SseEvent {
  /** The stream's last event id when this event was dispatched (an `id:` persists, as in EventSource). */
  id?: string;
  event?: string;
  data: string;
}

export interface SseHooks {
  /** The server answered 200: the stream is open. */
  onOpen?(): void;
  /** The server's `retry:` field: how long to wait before reconnecting, in ms. */
  onRetry?(ms: number): void;
}

/**
 * A field line's name and value, as the SSE spec parses them: the value is what follows the first
 * colon with one leading space (only one) removed; a line without a colon is a name with no value.
 */
export function sseField(line: string): [name: string, value: string] {
  const colon = line.indexOf(":");
  if (colon < 0) return [line, ""];
  const value = line.slice(colon + 1);
  return [line.slice(0, colon), value.startsWith(" ") ? value.slice(1) : value];
}

/**
 * Reads an event stream (GET /api/v1/events/stream) until `signal` aborts or the server ends it.
 * fetch rather than EventSource: Node has no EventSource, and the request needs its headers.
 * An HTTP error answer throws a SpoolApiError with its status.
 */
export async function* readSse(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  hooks: SseHooks = {},
): AsyncGenerator<SseEvent> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { ...headers, accept: "text/event-stream" }, signal });
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => ({}))) as { error?: string; error_type?: string };
    throw new SpoolApiError(res.status, body.error_type ?? "UNKNOWN", body.error ?? `HTTP ${res.status}`);
  }
  hooks.onOpen?.();
  const decoder = new TextDecoder();
  let buffer = "";
  let first = true;
  let lastEventId: string | undefined;
  let eventType: string | undefined;
  let data: string[] = [];
  try {
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      if (first && buffer.length > 0) {
        if (buffer.startsWith("\uFEFF")) buffer = buffer.slice(1);
        first = false;
      }
      // Lines end in CRLF, LF or CR; a CR at the end of the buffer may be the start of a CRLF.
      for (let m = /\r\n|\r|\n/.exec(buffer); m; m = /\r\n|\r|\n/.exec(buffer)) {
        if (m[0] === "\r" && m.index === buffer.length - 1) break;
        const line = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        if (line === "") {
          // Dispatch: an event with no data line is not one (its id still counts).
          if (data.length > 0) yield { id: lastEventId, event: eventType, data: data.join("\n") };
          data = [];
          eventType = undefined;
          continue;
        }
        if (line.startsWith(":")) continue; // a comment (the server's keep-alive)
        const [name, value] = sseField(line);
        if (name === "data") data.push(value);
        else if (name === "event") eventType = value;
        else if (name === "id" && !value.includes("\0")) lastEventId = value;
        else if (name === "retry" && /^\d+$/.test(value)) hooks.onRetry?.(Number(value));
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}
