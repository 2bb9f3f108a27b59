import { isTerminal, runTopic } from "@spool/shared";
import type { Ctx } from "../context.js";
import { headersOf } from "../context.js";
import { brief } from "../output.js";
import { readSse } from "../sse.js";

interface StreamEvent {
  sequence_id: number;
  event_type: string | null;
  data: Record<string, unknown>;
}

/** One event of a run's stream for a person: agent text inline, the rest a line each. */
function render(e: StreamEvent): string {
  switch (e.event_type) {
    case "agent.text_delta":
      return String(e.data.delta ?? "");
    case "agent.tool_call":
      return `\n→ ${String(e.data.tool_name)}(${brief(e.data.input)})\n`;
    case "agent.llm_finish":
      return "\n";
    case "agent.finish":
      return `\n[finished: ${String(e.data.stopped ?? "done")}]\n`;
    default:
      return `[${e.event_type ?? "event"}] ${brief(e.data)}\n`;
  }
}

/**
 * `spool logs <execution> [--follow]`: the run's stream (agent text, tool calls, what its steps
 * published), from its beginning; with --follow, as it arrives until the run ends.
 */
export async function runLogs(ctx: Ctx, id: string, o: { follow: boolean }) {
  const run = await ctx.client.executions.get(id);
  const topic = runTopic(run.workflow_id, run.id);
  const show = (e: StreamEvent) => ctx.out.write(ctx.out.json ? `${JSON.stringify(e)}\n` : render(e));
  if (!o.follow) {
    let after = 0;
    for (;;) {
      const page = (await ctx.client.events.list(topic, { afterSequenceId: after, limit: 500 })) as {
        events: StreamEvent[];
        next_sequence_id: number;
        has_more: boolean;
      };
      for (const e of page.events) show(e);
      if (!page.has_more) return;
      after = page.next_sequence_id;
    }
  }
  // The stream of a run starts at its beginning; it ends here once the run has.
  const stop = new AbortController();
  const watch = (async () => {
    const done = await ctx.client.executions
      .waitForResult(id, { timeoutMs: 24 * 3600_000 })
      .catch(() => null);
    if (done && isTerminal(done.status)) setTimeout(() => stop.abort(), 500).unref();
  })();
  // Named by its run (not its topic), the stream starts at the run's first event.
  const query = new URLSearchParams({ workflow_id: run.workflow_id, workflow_run_id: run.id });
  const url = `${ctx.conn.apiUrl.replace(/\/+$/, "")}/api/v1/events/stream?${query}`;
  for await (const event of readSse(url, headersOf(ctx.conn), stop.signal)) {
    if (!event.data) continue;
    show(JSON.parse(event.data) as StreamEvent);
  }
  await watch;
}
