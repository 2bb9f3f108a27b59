import { type LlmResponse, runTopic } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { useAgentSystem } from "./agent-system.js";

interface StreamEvent {
  event_type: string | null;
  data: { step_key?: string; call_id?: string; delta?: string; text?: string };
  created_at: string;
}

describe("an agent's live stream: which call each event belongs to, and a finish that is never lost", () => {
  const env = useAgentSystem();

  const streamOf = async (executionId: string) => {
    const topic = runTopic("weather-agent", executionId);
    const { events } = await env.sys.engine.events.history(env.sys.projectId, topic, 0, 500);
    return events as StreamEvent[];
  };
  const storedLlmStep = async (executionId: string, key: string) => {
    const steps = await env.sys.client.executions.steps(executionId);
    return steps.find((s) => s.step_key === key)!;
  };

  it("a call cut off mid-answer is retried under a new call_id; the stored response names the call that counts", async () => {
    env.llm.script(
      { text: "The answer is forty two.", chunkDelayMs: 30, dropAfterChunks: 2 },
      { text: "The answer is 42.", usage: { prompt_tokens: 12, completion_tokens: 6 } },
    );
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "The answer?" });
    const done = await env.sys.client.executions.waitForResult(execution_id);
    expect(done).toMatchObject({ status: "completed", result: { text: "The answer is 42." } });
    expect(env.llm.requests).toHaveLength(2);

    const events = await streamOf(execution_id);
    expect(events.every((e) => e.data.step_key === "llm-1" && typeof e.data.call_id === "string")).toBe(true);
    const callIds = [...new Set(events.map((e) => e.data.call_id))];
    expect(callIds).toHaveLength(2);
    const deltasOf = (callId: string | undefined) =>
      events.filter((e) => e.event_type === "agent.text_delta" && e.data.call_id === callId);
    // The lost attempt's text reached the stream: without its call_id a client would show it twice.
    expect(deltasOf(callIds[0]).map((e) => e.data.delta)).toEqual(["The ", "answer "]);

    const stored = (await storedLlmStep(execution_id, "llm-1")).output as LlmResponse;
    expect(stored.call_id).toBe(callIds[1]);
    const finishes = events.filter((e) => e.event_type === "agent.finish");
    expect(finishes.map((e) => e.data.call_id)).toEqual([stored.call_id]);
    // What a client keeps (the events of the step's latest call) is exactly the answer.
    expect(
      deltasOf(stored.call_id)
        .map((e) => e.data.delta)
        .join(""),
    ).toBe("The answer is 42.");
  });

  it("agent.finish is written before the final LLM step's result is stored, so no crash can lose it", async () => {
    env.llm.script({ text: "Calm seas today." });
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "The sea?" });
    expect((await env.sys.client.executions.waitForResult(execution_id)).status).toBe("completed");

    // A replay does not publish the finish again, so it must be stored before the step is: a worker
    // SIGKILLed in between would otherwise lose it. Compare when each write began (one clock: the
    // test's Postgres and worker share a host).
    const finishes = (await streamOf(execution_id)).filter((e) => e.event_type === "agent.finish");
    expect(finishes).toHaveLength(1);
    const { rows } = await env.sys.db.query<{ saved_at: Date }>(
      "SELECT completed_at AS saved_at FROM step_results WHERE execution_id = $1 AND step_key = 'llm-1'",
      [execution_id],
    );
    expect(new Date(finishes[0]!.created_at).getTime()).toBeLessThan(rows[0]!.saved_at.getTime());
  });
});
