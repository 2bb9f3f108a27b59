import type { Engine, PublishedEvent } from "@spool/engine";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { EventHub } from "./event-hub.js";

/**
 * One SSE connection: subscribe to the live feed first (buffering), catch up from Postgres after
 * `after`, then send live events. Every send goes through one ordered queue and skips sequences
 * already sent, so each event reaches this connection exactly once, in order.
 */
export function streamEvents(
  c: Context,
  args: {
    hub: EventHub;
    engine: Engine;
    projectId: string;
    topic: string;
    after: number;
    keepaliveMs: number;
  },
) {
  return streamSSE(c, async (stream) => {
    let last = args.after;
    let caughtUp = false;
    const pending: PublishedEvent[] = [];
    let sending: Promise<void> = Promise.resolve();

    const send = (events: PublishedEvent[]) => {
      sending = sending.then(async () => {
        for (const e of events) {
          if (e.sequence_id <= last || stream.aborted) continue;
          last = e.sequence_id;
          await stream.writeSSE({ id: String(e.sequence_id), data: JSON.stringify(e) });
        }
      });
      return sending;
    };

    // Registered before the first await: StreamingApi only calls the onAbort listeners it already has,
    // so a client leaving while we subscribe or catch up would leak its subscription and timer.
    const closed = new Promise<void>((resolve) => stream.onAbort(resolve));
    let unsubscribe: (() => void) | undefined;
    let keepalive: NodeJS.Timeout | undefined;
    try {
      unsubscribe = await args.hub.subscribe(args.projectId, args.topic, (events) => {
        if (caughtUp) void send(events);
        else pending.push(...events);
      });
      if (stream.aborted) return;
      keepalive = setInterval(() => {
        sending = sending.then(() => stream.write(": keep-alive\n\n").then(() => undefined));
      }, args.keepaliveMs);
      for (let more = true; more && !stream.aborted; ) {
        const page = await args.engine.events.history(args.projectId, args.topic, last, 500);
        await send(page.events);
        more = page.hasMore;
      }
      caughtUp = true;
      await send(pending.splice(0).sort((a, b) => a.sequence_id - b.sequence_id));
      await closed;
    } finally {
      clearInterval(keepalive);
      unsubscribe?.();
    }
  });
}
