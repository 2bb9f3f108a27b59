/** One Server-Sent Event as the API sends it. */
export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

/**
 * Reads an event stream (GET /api/v1/events/stream) until `signal` aborts or the server ends it.
 * fetch rather than EventSource: Node has no EventSource, and the request needs its headers.
 */
export async function* readSse(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): AsyncGenerator<SseEvent> {
  const res = await fetch(url, { headers: { ...headers, accept: "text/event-stream" }, signal });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => ({}))) as { error?: string };
    throw new Error(body.error ?? `HTTP ${res.status}`);
  }
  const decoder = new TextDecoder();
  let buffer = "";
  let event: SseEvent = { data: "" };
  try {
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let nl = buffer.indexOf("\n");
      while (nl >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        nl = buffer.indexOf("\n");
        if (line === "") {
          if (event.data !== "" || event.event) yield event;
          event = { data: "" };
        } else if (line.startsWith("data:")) {
          event.data += (event.data ? "\n" : "") + line.slice(5).trimStart();
        } else if (line.startsWith("event:")) {
          event.event = line.slice(6).trim();
        } else if (line.startsWith("id:")) {
          event.id = line.slice(3).trim();
        }
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}
