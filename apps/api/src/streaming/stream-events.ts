import type { Engine, PublishedEvent } from "@spool/engine";
import { SpoolError } from "@spool/shared";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { ApiEnv } from "../context.js";
import { logFailure, RETRY_AFTER_SECONDS } from "../errors.js";
import type { EventHub } from "./event-hub.js";

const REVOCATION_CHECK_MS = 1000;

/**
 * One SSE connection: subscribe to the live feed first (buffering), catch up from Postgres after
 * `after`, then send live events. Every send goes through one ordered queue and skips sequences
 * already sent, so each event reaches this connection exactly once, in order.
 *
 * The 200 is out before the first read, so a failure (Postgres gone) can only end the stream: the
 * client reconnects with Last-Event-ID and misses nothing. Before ending, a dependency outage sets
 * the SSE `retry:` delay to the 503's Retry-After, so an EventSource does not reconnect at once.
 */
export function streamEvents(
  c: Context<ApiEnv>,
  args: {
    hub: EventHub;
    engine: Engine;
    projectId: string;
    topic: string;
    after: number;
    keepaliveMs: number;
  },
) {
  const principal = c.get("principal");
  const release = principal.kind === "project" ? c.get("limits").streams.take(principal.keyId) : () => {};
  if (!release) {
    throw new SpoolError(
      "RATE_LIMITED",
      `this API key already holds ${c.get("limits").streams.max} open event streams here; close one first`,
    );
  }
  return streamSSE(c, async (stream) => {
    c.get("metrics").streamOpened();
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
    // A revoked key's stream ends within a second (the check is one read per key per second).
    let revocationCheck: NodeJS.Timeout | undefined;
    const revoked = new Promise<void>((resolve) => {
      if (principal.kind !== "project") return;
      revocationCheck = setInterval(() => {
        args.engine.projects.isRevoked(principal.keyId).then(
          (gone) => gone && resolve(),
          () => {}, // Postgres away: the stream's own reads fail and end it
        );
      }, REVOCATION_CHECK_MS);
    });
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
      const ended = await Promise.race([
        closed.then(() => "client" as const),
        revoked.then(() => "revoked" as const),
      ]);
      c.get("logger").debug(
        { topic: args.topic },
        ended === "client" ? "event stream closed by the client" : "event stream ended: its key was revoked",
      );
    } catch (err) {
      // Caught here, not by streamSSE: it would print the stack to stderr and send the raw message
      // (host, port) to the client as an `error` event.
      const context = { path: c.req.path, topic: args.topic };
      if (stream.aborted) {
        c.get("logger").debug({ ...context, err: String(err) }, "event stream closed by the client");
      } else if (logFailure(c.get("logger"), err, context) === "unavailable") {
        await sending.catch(() => {});
        await stream.write(`retry: ${RETRY_AFTER_SECONDS * 1000}\n\n`);
      }
    } finally {
      clearInterval(keepalive);
      clearInterval(revocationCheck);
      unsubscribe?.();
      release();
      c.get("metrics").streamClosed();
    }
  });
}
