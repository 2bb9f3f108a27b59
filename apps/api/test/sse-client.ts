// A minimal SSE reader over fetch, for tests: yields events with their id, and can stop any time.
export interface SseEvent {
  id: string | null;
  data: string;
}

export async function openSse(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: controller.signal,
  });
  const received: SseEvent[] = [];
  const comments: string[] = [];
  let notify = null as (() => void) | null;
  const done = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let sep = buffer.indexOf("\n\n");
        while (sep >= 0) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep + 2);
          sep = buffer.indexOf("\n\n");
          let id: string | null = null;
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments.push(line);
            else if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (data.length) received.push({ id, data: data.join("\n") });
          notify?.();
        }
      }
    } catch {
      // aborted
    }
  })();
  const atLeast = async (n: number, list: unknown[], what: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (list.length < n) {
      if (Date.now() > deadline) throw new Error(`got ${list.length} of ${n} ${what}`);
      await new Promise<void>((resolve) => {
        notify = resolve;
        setTimeout(resolve, 50);
      });
    }
  };
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    received,
    comments,
    /** Resolves once at least `n` events arrived. */
    async waitFor(n: number, timeoutMs = 10_000) {
      await atLeast(n, received, "events", timeoutMs);
      return received;
    },
    /**
     * Resolves once at least `n` comment lines arrived. The server starts its keep-alive comments
     * only once the stream is subscribed to the live feed, so the first one shows that.
     */
    async waitForComments(n: number, timeoutMs = 10_000) {
      await atLeast(n, comments, "comments", timeoutMs);
      return comments;
    },
    /** Settles when the stream ends (the server closed it, or close() was called). */
    ended: done,
    async close() {
      controller.abort();
      await done;
    },
  };
}
