import { runTopic } from "@spool/shared";
import type { Events } from "../events/events.js";
import { createBatcher } from "./batcher.js";

/** How often buffered live events of a run are published (one transaction per flush). */
export const STREAM_FLUSH_MS = 50;

/**
 * The live events of one run (agent text deltas, tool calls, finish), published in order on the
 * run's topic `workflow/<workflow_id>/<execution_id>`, where `GET /events/stream` shows them.
 * `publish` returns a promise that settles once the event is written (`now` writes it without
 * waiting for the next batch): the replay runtime hands it back to the step, which awaits it for an
 * event a crash must not lose (`agent.finish` is written before the LLM step's result is stored).
 */
export function createRunStream(
  events: Events,
  run: { projectId: string; workflowId: string; executionId: string },
  onError: (err: unknown) => void,
) {
  const topic = runTopic(run.workflowId, run.executionId);
  const batcher = createBatcher<{ eventType: string; data: Record<string, unknown> }>(
    STREAM_FLUSH_MS,
    (batch) =>
      events.publish(
        run.projectId,
        topic,
        batch.map((e) => ({ eventType: e.eventType, data: e.data })),
      ),
    onError,
  );
  const publish = (e: { eventType: string; data: Record<string, unknown>; now?: boolean }) => {
    const written = batcher.add({ eventType: e.eventType, data: e.data });
    if (e.now) void batcher.flush();
    return written;
  };
  return { topic, publish, flush: batcher.flush };
}
