import { countArg, jsonArg, UsageError } from "../config.js";
import type { Ctx } from "../context.js";
import { followStream } from "../follow-stream.js";
import { brief } from "../output.js";

/** `spool events publish <topic> --data <json|@file> [--type t]` */
export async function publishEvent(ctx: Ctx, topic: string, o: { data?: string; type?: string }) {
  const data = jsonArg(o.data, "--data");
  if (typeof data !== "object" || data === null)
    throw new UsageError("--data must be a JSON object or array of objects");
  const events = await ctx.client.events.publish(topic, data as Record<string, unknown>, {
    eventType: o.type,
  });
  if (ctx.out.json) ctx.out.write(`${JSON.stringify({ events })}\n`);
  else for (const e of events) ctx.out.write(`published ${e.topic} #${e.sequence_id}\n`);
}

/**
 * `spool events tail <topic> [--from <sequence>]`: new events as they arrive (or those after `--from`
 * first), until Ctrl-C; through API restarts, each once.
 */
export async function tailEvents(ctx: Ctx, topic: string, o: { from?: string; signal: AbortSignal }) {
  const after = countArg(o.from, "--from", 0);
  const query = new URLSearchParams({
    topic,
    ...(after !== undefined ? { last_sequence_id: String(after) } : {}),
  });
  const url = `${ctx.conn.apiUrl.replace(/\/+$/, "")}/api/v1/events/stream?${query}`;
  await followStream(ctx, url, {
    signal: o.signal,
    after,
    resumeHint: "spool events tail <topic> --from <the last sequence id shown> picks it up again",
    show: (e, raw) =>
      ctx.out.write(
        ctx.out.json ? `${raw}\n` : `#${e.sequence_id} ${e.event_type ?? "-"} ${brief(e.data)}\n`,
      ),
  });
}
