import { setTimeout as sleep } from "node:timers/promises";
import { createClient, type Execution, SpoolApiError } from "@spool/sdk/client";
import { isTerminal, runTopic } from "@spool/shared";
import type { Ctx } from "../context.js";
import { headersOf } from "../context.js";
import { brief } from "../output.js";
import { readSse } from "../sse.js";
import { outcomeLine } from "./follow.js";

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

/** Reconnecting: the first wait, the longest, and how long the API may stay out of reach. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
const GIVE_UP_MS = 60_000;
/** One long poll of the run's status (seconds; the API grants up to 120). */
const POLL_WAIT_SECONDS = 30;

/** Whether a failure to reach the API may pass (it restarts, a proxy hiccups): worth trying again. */
function isTransient(err: unknown): boolean {
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

/** Tracks how long the API has been out of reach; throws once that is longer than GIVE_UP_MS. */
function outage(ctx: Ctx, id: string) {
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
          `lost the API at ${ctx.conn.apiUrl} for ${GIVE_UP_MS / 1000} s (${(err as Error).message}); ` +
            `run ${id} may still be going: spool logs ${id} --follow picks it up again`,
        );
      }
      await pause(wait, signal);
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    },
  };
}

/** Long-polls the run until it ends (through API restarts); undefined when `signal` aborts first. */
async function watchRun(ctx: Ctx, id: string, signal: AbortSignal): Promise<Execution | undefined> {
  const client = createClient({
    baseUrl: ctx.conn.apiUrl,
    apiKey: ctx.conn.apiKey,
    projectId: ctx.conn.projectId,
    fetch: (url, init) => fetch(url, { ...init, signal }),
  });
  const lost = outage(ctx, id);
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
  const lost = outage(ctx, id);
  let last = 0;
  let announced = false;
  const opened = () => {
    lost.reached();
    // On stderr, so stdout stays the stream alone (and --json pure JSON lines).
    if (!announced) process.stderr.write(`spool: following run ${id} (Ctrl-C stops)\n`);
    announced = true;
  };
  try {
    while (!ended.signal.aborted) {
      const headers = { ...headersOf(ctx.conn), ...(last > 0 ? { "last-event-id": String(last) } : {}) };
      try {
        for await (const event of readSse(url, headers, ended.signal, {
          onOpen: opened,
          onRetry: (ms) => lost.retryIn(ms),
        })) {
          if (!event.data) continue;
          const e = parseEvent(event.data);
          if (e.sequence_id <= last) continue;
          show(e);
          last = e.sequence_id;
        }
        if (ended.signal.aborted) break;
        await lost.failed(new Error("the event stream ended"), ended.signal);
      } catch (err) {
        if (ended.signal.aborted) break;
        if (!isTransient(err)) throw err;
        await lost.failed(err, ended.signal);
      }
    }
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
