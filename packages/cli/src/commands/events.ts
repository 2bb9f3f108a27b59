import { jsonArg, UsageError } from "../config.js";
import type { Ctx } from "../context.js";
import { headersOf } from "../context.js";
import { brief } from "../output.js";
import { readSse } from "../sse.js";

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

/** `spool events tail <topic> [--from <sequence>]`: new events as they arrive, until Ctrl-C. */
export async function tailEvents(ctx: Ctx, topic: string, o: { from?: string; signal: AbortSignal }) {
  const query = new URLSearchParams({ topic, ...(o.from ? { last_sequence_id: o.from } : {}) });
  const url = `${ctx.conn.apiUrl.replace(/\/+$/, "")}/api/v1/events/stream?${query}`;
  for await (const event of readSse(url, headersOf(ctx.conn), o.signal)) {
    if (!event.data) continue;
    const e = JSON.parse(event.data) as { sequence_id: number; event_type: string | null; data: unknown };
    ctx.out.write(
      ctx.out.json ? `${event.data}\n` : `#${e.sequence_id} ${e.event_type ?? "-"} ${brief(e.data)}\n`,
    );
  }
}
