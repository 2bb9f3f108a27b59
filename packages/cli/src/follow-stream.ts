import { setTimeout as sleep } from "node:timers/promises";
import { SpoolApiError } from "@spool/sdk/client";
import type { Ctx } from "./context.js";
import { headersOf } from "./context.js";
import { readSse } from "./sse.js";

/** An event of a stream (GET /api/v1/events/stream), as the API sends it. */
export interface StreamEvent {
  sequence_id: number;
  event_type: string | null;
  data: Record<string, unknown>;
}

/** Reconnecting: the first wait, the longest, and how long the API may stay out of reach. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
const GIVE_UP_MS = 60_000;

/** Whether a failure to reach the API may pass (it restarts, a proxy hiccups): worth trying again. */
export function isTransient(err: unknown): boolean {
  if (err instanceof SpoolApiError) return err.status >= 500 || err.status === 429;
  // fetch's "fetch failed"/"terminated" (connection refused or reset), or a proxy's non-JSON answer
  return err instanceof TypeError || err instanceof SyntaxError;
}

/** An event of the stream; one that is not JSON is the server's fault, not a reason to reconnect. */
function parseEvent(data: string): StreamEvent {
  try {
    return JSON.parse(data) as StreamEvent;
  } catch {
    throw new Error(`the event stream sent an event that is not JSON: ${data.slice(0, 200)}`);
  }
}

/** Waits `ms`, or less when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => {});

/**
 * Tracks how long the API has been out of reach; throws once that is longer than GIVE_UP_MS, saying
 * how to pick up again (`resumeHint`).
 */
export function outage(ctx: Ctx, resumeHint: string) {
  let since: number | undefined;
  let wait = RETRY_FIRST_MS;
  return {
    reached() {
      since = undefined;
      wait = RETRY_FIRST_MS;
    },
    /** The server's own `retry:` delay, for the next wait. */
    retryIn(ms: number) {
      wait = ms;
    },
    /** After a failure: waits before the next try, or throws when the API has been gone too long. */
    async failed(err: unknown, signal: AbortSignal) {
      since ??= Date.now();
      if (Date.now() - since > GIVE_UP_MS) {
        throw new Error(
          `lost the API at ${ctx.conn.apiUrl} for ${GIVE_UP_MS / 1000} s (${(err as Error).message}); ${resumeHint}`,
        );
      }
      await pause(wait, signal);
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    },
  };
}

/**
 * Follows an event stream until `signal` aborts. The API keeps a stream open, but a restart or a
 * proxy ends it: it is opened again with `Last-Event-ID` (the last event shown), so each event is
 * shown once, in order. Returns the last sequence id shown (`after` when none).
 */
export async function followStream(
  ctx: Ctx,
  url: string,
  o: {
    signal: AbortSignal;
    show: (e: StreamEvent, raw: string) => void;
    /** Shown already: a stream (re)opened with this id starts after it. */
    after?: number;
    /** Said when the API has been out of reach too long. */
    resumeHint: string;
    /** The stream answered for the first time. */
    onFirstOpen?: () => void;
  },
): Promise<number> {
  const lost = outage(ctx, o.resumeHint);
  let last = o.after ?? 0;
  let opened = false;
  while (!o.signal.aborted) {
    const headers = { ...headersOf(ctx.conn), ...(last > 0 ? { "last-event-id": String(last) } : {}) };
    try {
      for await (const event of readSse(url, headers, o.signal, {
        onOpen: () => {
          lost.reached();
          if (!opened) o.onFirstOpen?.();
          opened = true;
        },
        onRetry: (ms) => lost.retryIn(ms),
      })) {
        if (!event.data) continue;
        const e = parseEvent(event.data);
        if (e.sequence_id <= last) continue;
        o.show(e, event.data);
        last = e.sequence_id;
      }
      if (o.signal.aborted) break;
      await lost.failed(new Error("the event stream ended"), o.signal);
    } catch (err) {
      if (o.signal.aborted) break;
      if (!isTransient(err)) throw err;
      await lost.failed(err, o.signal);
    }
  }
  return last;
}
