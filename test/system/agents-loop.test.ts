import { type AgentResult, runTopic } from "@spool/shared";
import { describe, expect, it } from "vitest";
import { countOf } from "../fixtures/side-effects.js";
import type { ScriptedReply } from "../llm/server.js";
import { useAgentSystem } from "./agent-system.js";

describe("the agent loop: step budget, parallel tools, conversation input (real worker, test LLM)", () => {
  const env = useAgentSystem();

  const finished = async (executionId: string) => {
    const done = await env.sys.client.executions.waitForResult(executionId);
    expect(done.status).toBe("completed");
    return done.result as AgentResult;
  };

  it("maxSteps 3 with a model that always wants tools: the third call withholds them and its text is the answer", async () => {
    const wantsTools = (city: string): ScriptedReply => ({
      text: `Let me check ${city}.`,
      toolCalls: [{ name: "get-weather", arguments: { city } }],
    });
    env.llm.script(wantsTools("Oslo"), wantsTools("Bergen"), wantsTools("Tromso"));
    const { execution_id } = await env.sys.client.run("budget-agent", { message: "Weather up north?" });
    const result = await finished(execution_id);

    expect(result).toMatchObject({
      text: "Let me check Tromso.",
      stopped: "max_steps",
      usage: { input_tokens: 30, output_tokens: 15, total_tokens: 45 },
    });
    expect(result.tool_calls.map((c) => c.input)).toEqual([{ city: "Oslo" }, { city: "Bergen" }]);
    expect(env.llm.requests).toHaveLength(3);
    expect(env.llm.requests.map((r) => r.body.tool_choice)).toEqual(["auto", "auto", "none"]);
    // Still described on the last call: the conversation holds calls of them.
    expect(env.llm.requests[2]!.body.tools?.map((t) => t.function.name)).toEqual(["get-weather"]);
    expect(await countOf(execution_id, "get-weather:Tromso")).toBe(0);
    const steps = await env.sys.client.executions.steps(execution_id);
    expect(steps.map((s) => s.step_key)).toEqual([
      "llm-1",
      "tool-1-1-get-weather",
      "llm-2",
      "tool-2-1-get-weather",
      "llm-3",
    ]);
    const { events } = await env.sys.engine.events.history(
      env.sys.projectId,
      runTopic("budget-agent", execution_id),
      0,
      500,
    );
    const finishes = events.filter((e) => e.event_type === "agent.finish");
    expect(finishes.map((e) => e.data)).toEqual([
      expect.objectContaining({ step_key: "llm-3", text: "Let me check Tromso.", stopped: "max_steps" }),
    ]);
  });

  it("a model that answers before the budget runs out stops with stopped: final_answer", async () => {
    env.llm.script({ toolCalls: [{ name: "get-weather", arguments: { city: "Oslo" } }] }, { text: "Mild." });
    const { execution_id } = await env.sys.client.run("budget-agent", { message: "Oslo?" });
    expect(await finished(execution_id)).toMatchObject({ text: "Mild.", stopped: "final_answer" });
    expect(env.llm.requests.map((r) => r.body.tool_choice)).toEqual(["auto", "auto"]);
  });

  it("parallel tool calls run at the same time: each waits until the other has started", async () => {
    env.llm.script(
      {
        toolCalls: [
          { name: "meet-partner", arguments: { me: "a", partner: "b" } },
          { name: "meet-partner", arguments: { me: "b", partner: "a" } },
        ],
      },
      { text: "Both met." },
    );
    const { execution_id } = await env.sys.client.run("meeting-agent", { message: "Meet up" });
    const result = await finished(execution_id);
    // Run one after the other, the first call would have failed (its partner never started).
    expect(result.tool_calls.map((c) => c.error ?? c.output)).toEqual([{ met: "b" }, { met: "a" }]);
    expect(await countOf(execution_id, "meet:a")).toBe(1);
    expect(await countOf(execution_id, "meet:b")).toBe(1);
  });

  it('runs with input {"messages": [...]}: the model gets the system prompt, then the conversation as given', async () => {
    env.llm.script({ text: "Still sunny in Rome." });
    const conversation = [
      { role: "user", content: "Weather in Rome?" },
      { role: "assistant", content: "Sunny, 21 C." },
      { role: "user", content: "And now?" },
    ];
    const { execution_id } = await env.sys.client.run("weather-agent", { messages: conversation });
    expect(await finished(execution_id)).toMatchObject({
      text: "Still sunny in Rome.",
      stopped: "final_answer",
    });
    const sent = env.llm.requests[0]!.body.messages;
    expect(sent[0]).toMatchObject({ role: "system" });
    expect(sent.slice(1).map((m) => ({ role: m.role, content: m.content }))).toEqual(conversation);
  });

  it("a message list with a message that has no role fails the run without retries, saying what is expected", async () => {
    const { execution_id } = await env.sys.client.run("weather-agent", { messages: [{ content: "hi" }] });
    const done = await env.sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ message: expect.stringContaining("every message needs a role") });
    expect(env.llm.requests).toHaveLength(0);
  });
});
