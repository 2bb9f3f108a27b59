import { createClient, type Execution } from "@spool/sdk/client";
import { isTerminal, runTopic } from "@spool/shared";
import type { Ctx } from "../context.js";
import { followStream, isTransient, outage, type StreamEvent } from "../follow-stream.js";
import { brief } from "../output.js";
import { outcomeLine } from "./follow.js";

/** One long poll of the run's status (seconds; the API grants up to 120). */
const POLL_WAIT_SECONDS = 30;

/** What to run to pick a run up again after the API was lost. */
const resumeHint = (id: string) =>
  `run ${id} may still be going: spool logs ${id} --follow picks it up again`;

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

/** Long-polls the run until it ends (through API restarts); undefined when `signal` aborts first. */
async function watchRun(ctx: Ctx, id: string, signal: AbortSignal): Promise<Execution | undefined> {
  const client = createClient({
    baseUrl: ctx.conn.apiUrl,
    apiKey: ctx.conn.apiKey,
    projectId: ctx.conn.projectId,
    fetch: (url, init) => fetch(url, { ...init, signal }),
  });
  const lost = outage(ctx, resumeHint(id));
  while (!signal.aborted) {
    try {
      const run = await client.request<Execution>(
        "GET",
        `/executions/${encodeURIComponent(id)}?wait=${POLL_WAIT_SECONDS}`,
      );
      lost.reached();
      if (isTerminal(run.status)) return run;
    } catch (err) {
      if (signal.aborted) break;
      if (!isTransient(err)) throw err;
      await lost.failed(err, signal);
    }
  }
  return undefined;
}

/** Shows the topic's stored events after `after`; returns the last sequence id shown. */
async function showStored(
  ctx: Ctx,
  topic: string,
  after: number,
  show: (e: StreamEvent) => void,
): Promise<number> {
  for (;;) {
    const page = (await ctx.client.events.list(topic, { afterSequenceId: after, limit: 500 })) as {
      events: StreamEvent[];
      next_sequence_id: number;
      has_more: boolean;
    };
    for (const e of page.events) {
      if (e.sequence_id <= after) continue;
      show(e);
      after = e.sequence_id;
    }
    if (!page.has_more) return after;
    after = Math.max(after, page.next_sequence_id);
  }
}

/**
 * `spool logs <execution> [--follow]`: the run's stream (agent text, tool calls, what its steps
 * published), from its beginning; with --follow, as it arrives until the run ends. Returns the exit
 * status: 0, or with --follow 1 when the run did not complete (how it ended on stderr).
 */
export async function runLogs(ctx: Ctx, id: string, o: { follow: boolean }): Promise<number> {
  const run = await ctx.client.executions.get(id);
  const topic = runTopic(run.workflow_id, run.id);
  const show = (e: StreamEvent) => ctx.out.write(ctx.out.json ? `${JSON.stringify(e)}\n` : render(e));
  if (!o.follow) {
    await showStored(ctx, topic, 0, show);
    return 0;
  }
  // The stream never ends by itself (the API keeps it open): it is followed until the run has ended,
  // and reconnected from the last event seen whenever it ends (or breaks) before that.
  const ended = new AbortController();
  const watching = watchRun(ctx, id, ended.signal).finally(() => ended.abort());
  watching.catch(() => {}); // awaited below
  // Named by its run (not its topic), the stream starts at the run's first event.
  const query = new URLSearchParams({ workflow_id: run.workflow_id, workflow_run_id: run.id });
  const url = `${ctx.conn.apiUrl.replace(/\/+$/, "")}/api/v1/events/stream?${query}`;
  let last = 0;
  try {
    last = await followStream(ctx, url, {
      signal: ended.signal,
      show: (e) => show(e),
      resumeHint: resumeHint(id),
      // On stderr, so stdout stays the stream alone (and --json pure JSON lines).
      onFirstOpen: () => process.stderr.write(`spool: following run ${id} (Ctrl-C stops)\n`),
    });
  } finally {
    ended.abort();
  }
  const final = await watching;
  if (!final) throw new Error(`stopped following run ${id}`);
  // What the run published before it ended that the stream had not brought yet.
  await showStored(ctx, topic, last, show);
  if (final.status === "completed") return 0;
  process.stderr.write(`spool: run ${id} ${outcomeLine(final)}\n`);
  return 1;
}
