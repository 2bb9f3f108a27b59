import type { ListTracesResponse, TraceResponse } from "@spool/shared";
import { traceIdOf } from "@spool/shared";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { openSse } from "../../apps/api/test/sse-client.js";
import { countOf } from "../fixtures/side-effects.js";
import type { TestLlm } from "../llm/server.js";
import { useAgentSystem } from "./agent-system.js";
import { eventually } from "./harness.js";

type Trace = z.infer<typeof TraceResponse>;

/** The tool results the model was sent in one request, by tool call id. */
const toolMessages = (llm: TestLlm, request: number) =>
  llm.requests[request]!.body.messages.filter((m) => m.role === "tool").map((m) => String(m.content));

describe("agents (real API, worker processes and the AI SDK talking to a local test LLM)", () => {
  const env = useAgentSystem();

  // Read at once: the transition that finishes a run writes its trace in the same transaction, so a
  // run seen finished has a trace that agrees.
  const trace = (executionId: string) =>
    env.sys.client.request<Trace>("GET", `/traces/${traceIdOf(executionId)}`);

  it("answers in three LLM turns with parallel tool calls; steps and trace show every call with token usage", async () => {
    env.llm.script(
      {
        toolCalls: [
          { name: "get-weather", arguments: { city: "Paris" } },
          { name: "get-weather", arguments: { city: "Atlantis" } },
        ],
        usage: { prompt_tokens: 100, completion_tokens: 20 },
      },
      {
        toolCalls: [{ name: "convert-units", arguments: { celsius: 21 } }],
        usage: { prompt_tokens: 150, completion_tokens: 10 },
      },
      { text: "It is 21 C (69.8 F) in Paris.", usage: { prompt_tokens: 200, completion_tokens: 15 } },
    );
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "Weather in Paris?" });
    const done = await env.sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("completed");
    expect(done.result).toMatchObject({
      text: "It is 21 C (69.8 F) in Paris.",
      stopped: "final_answer",
      usage: { input_tokens: 450, output_tokens: 45, total_tokens: 495 },
    });
    const calls = (done.result as { tool_calls: { tool_name: string; output?: unknown; error?: string }[] })
      .tool_calls;
    expect(calls.map((c) => [c.tool_name, c.output ?? c.error])).toEqual([
      ["get-weather", { city: "Paris", temp_c: 21 }],
      ["get-weather", "no weather station in Atlantis"],
      ["convert-units", { fahrenheit: 69.8 }],
    ]);

    // The model was told the tool error as a tool result, and saw the system prompt and the tools.
    expect(env.llm.requests).toHaveLength(3);
    // Streamed usage is sent only on request (as OpenAI does): the provider must ask for it.
    expect(env.llm.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(env.llm.requests[0]!.body.messages[0]).toMatchObject({
      role: "system",
      content: expect.stringContaining("weather"),
    });
    expect(env.llm.requests[0]!.body.tools?.map((t) => t.function.name).sort()).toEqual([
      "convert-units",
      "get-weather",
    ]);
    const [paris, atlantisResult] = toolMessages(env.llm, 1);
    expect(JSON.parse(paris!)).toEqual({ city: "Paris", temp_c: 21 });
    expect(atlantisResult).toBe("Error: no weather station in Atlantis");

    const steps = await env.sys.client.executions.steps(execution_id);
    expect(steps.map((s) => s.step_key)).toEqual([
      "llm-1",
      "tool-1-1-get-weather",
      "tool-1-2-get-weather",
      "llm-2",
      "tool-2-1-convert-units",
      "llm-3",
    ]);
    expect(steps[0]!.output).toMatchObject({
      tool_calls: [{ tool_name: "get-weather" }, { tool_name: "get-weather" }],
    });

    const t = await trace(execution_id);
    const root = t.spans.find((s) => s.parent_span_id === null)!;
    expect(root).toMatchObject({ name: "weather-agent", span_type: "agent" });
    expect(t.status).toBe("completed");
    const children = t.spans.filter((s) => s.parent_span_id === root.span_id);
    expect(children.map((s) => [s.name, s.span_type])).toEqual([
      ["llm-1", "llm"],
      ["tool-1-1-get-weather", "tool"],
      ["tool-1-2-get-weather", "tool"],
      ["llm-2", "llm"],
      ["tool-2-1-convert-units", "tool"],
      ["llm-3", "llm"],
    ]);
    const llmSpans = children.filter((s) => s.span_type === "llm");
    expect(llmSpans.map((s) => s.attributes["llm.usage.input_tokens"])).toEqual([100, 150, 200]);
    expect(llmSpans.map((s) => s.attributes["llm.usage.output_tokens"])).toEqual([20, 10, 15]);
    expect(llmSpans[0]!.attributes).toMatchObject({
      "llm.model": "test-model",
      "llm.provider": "openai-compatible",
    });
    expect(llmSpans[0]!.attributes["llm.latency_ms"]).toEqual(expect.any(Number));
    const sent = (llmSpans[2]!.input as { messages: { role: string }[] }).messages;
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool"]);
    expect(llmSpans[2]!.output).toMatchObject({ text: "It is 21 C (69.8 F) in Paris." });
    const atlantis = children.find((s) => s.name === "tool-1-2-get-weather")!;
    expect(atlantis.input).toEqual({ city: "Atlantis" });
    expect(atlantis.error).toMatchObject({ message: "no weather station in Atlantis" });
    expect(t.error_count).toBe(1);
  });

  it("a tool needing approval suspends the run; a rejection skips the tool and tells the model why", async () => {
    env.llm.script(
      { toolCalls: [{ name: "send-email", arguments: { to: "ceo@acme.test", body: "hi" } }] },
      { text: "Understood, I did not send it." },
    );
    const { execution_id } = await env.sys.client.run("mailer-agent", { message: "Email the CEO" });
    const parked = await eventually(async () => {
      const e = await env.sys.client.executions.get(execution_id);
      return e.status === "suspended" ? e : undefined;
    });
    expect(parked.suspended_step_key).toBe("tool-1-1-send-email:approval");
    expect(parked.suspended_data).toMatchObject({
      type: "tool_approval",
      tool_id: "send-email",
      input: { to: "ceo@acme.test" },
    });
    expect(env.llm.requests).toHaveLength(1);

    await env.sys.client.executions.resume(execution_id, {
      approved: false,
      feedback: "Never email the CEO directly",
    });
    const done = await env.sys.client.executions.waitForResult(execution_id);
    expect(done.status).toBe("completed");
    expect(await countOf(execution_id, "send-email")).toBe(0);
    expect(env.llm.requests).toHaveLength(2);
    const [told] = toolMessages(env.llm, 1);
    expect(told).toContain("rejected");
    expect(told).toContain("Never email the CEO directly");
    expect(done.result).toMatchObject({ text: "Understood, I did not send it." });

    // The suspended approval is one span, from suspend to resume.
    const t = await trace(execution_id);
    const approval = t.spans.filter((s) => s.name === "tool-1-1-send-email:approval");
    expect(approval).toHaveLength(1);
    expect(approval[0]!.ended_at).not.toBeNull();
    expect(approval[0]!.output).toMatchObject({ approved: false });
  });

  it("an approved tool call runs and the model sees its output", async () => {
    env.llm.script(
      { toolCalls: [{ name: "send-email", arguments: { to: "team@acme.test", body: "hi" } }] },
      { text: "Sent." },
    );
    const { execution_id } = await env.sys.client.run("mailer-agent", { message: "Email the team" });
    await eventually(async () =>
      (await env.sys.client.executions.get(execution_id)).status === "suspended" ? true : undefined,
    );
    await env.sys.client.executions.resume(execution_id, { approved: true });
    expect((await env.sys.client.executions.waitForResult(execution_id)).status).toBe("completed");
    expect(await countOf(execution_id, "send-email")).toBe(1);
    expect(toolMessages(env.llm, 1).map((m) => JSON.parse(m))).toEqual([
      { sent: true, to: "team@acme.test" },
    ]);
  });

  it("an SSE client on the run's topic receives the text deltas live, in order, then a finish event", async () => {
    const words = ["The ", "sky ", "is ", "clear ", "over ", "Oslo ", "today", "."];
    env.llm.script({ text: words.join(""), chunks: words, chunkDelayMs: 150 });
    const { execution_id } = await env.sys.client.run("weather-agent", { message: "Oslo?" });
    const sse = await openSse(
      `${env.sys.apiUrl}/api/v1/events/stream?workflow_id=weather-agent&workflow_run_id=${execution_id}`,
      { authorization: `Bearer ${env.sys.apiKey}`, "x-project-id": env.sys.projectId },
    );
    try {
      expect(sse.status).toBe(200);
      await sse.waitFor(1, 20_000);
      // The first delta arrives while the model is still streaming, not after the run.
      expect((await env.sys.client.executions.get(execution_id)).status).toBe("running");
      const events = await eventually(async () => {
        const parsed = sse.received.map(
          (e) => JSON.parse(e.data) as { event_type: string; data: Record<string, unknown> },
        );
        return parsed.some((e) => e.event_type === "agent.finish") ? parsed : undefined;
      }, 20_000);
      const deltas = events.filter((e) => e.event_type === "agent.text_delta").map((e) => e.data.delta);
      expect(deltas).toEqual(words);
      const finish = events.find((e) => e.event_type === "agent.finish")!;
      expect(finish.data).toMatchObject({ text: words.join(""), stopped: "final_answer", step_key: "llm-1" });
      // Every event names its step and model call (a retried call would stream under a new call_id).
      expect(new Set(events.map((e) => `${e.data.step_key} ${e.data.call_id}`))).toEqual(
        new Set([`llm-1 ${finish.data.call_id}`]),
      );
      expect(events.indexOf(finish)).toBeGreaterThan(
        events.findLastIndex((e) => e.event_type === "agent.text_delta"),
      );
    } finally {
      await sse.close();
    }
  });

  it("ctx.step.agent runs the agent as a child run in the same trace; ctx.step.tool runs a tool as a step", async () => {
    env.llm.script({ text: "Sunny in Rome." });
    const { execution_id } = await env.sys.client.run("weather-report", { city: "Rome" });
    const done = await env.sys.client.executions.waitForResult(execution_id);
    expect(done).toMatchObject({
      status: "completed",
      result: { text: "Sunny in Rome.", converted: { fahrenheit: 68 } },
    });
    const t = await trace(execution_id);
    const byName = (n: string) => t.spans.find((s) => s.name === n)!;
    expect(byName("weather-report").parent_span_id).toBeNull();
    expect(byName("ask-agent").parent_span_id).toBe(byName("weather-report").span_id);
    expect(byName("weather-agent")).toMatchObject({
      span_type: "agent",
      parent_span_id: byName("ask-agent").span_id,
    });
    expect(byName("llm-1")).toMatchObject({
      span_type: "llm",
      parent_span_id: byName("weather-agent").span_id,
    });
    expect(byName("convert")).toMatchObject({ span_type: "tool", output: { fahrenheit: 68 } });
  });

  it("GET /traces?has_error=true&workflow_id=... lists exactly the failed runs of that workflow", async () => {
    const runs = await Promise.all(
      [true, false, true].map((fail) =>
        env.sys.client.run("maybe-fail", { fail }).then((r) => r.execution_id),
      ),
    );
    const other = (await env.sys.client.run("always-fail", {})).execution_id;
    await Promise.all([...runs, other].map((id) => env.sys.client.executions.waitForResult(id)));
    type List = z.infer<typeof ListTracesResponse>;
    for (const id of runs) await trace(id!); // every trace has caught up with its run
    const failed = await env.sys.client.request<List>("GET", "/traces?has_error=true&workflow_id=maybe-fail");
    expect(failed.traces.map((t) => t.trace_id).sort()).toEqual([runs[0]!, runs[2]!].map(traceIdOf).sort());
    expect(failed.traces[0]).toMatchObject({
      root_span_name: "maybe-fail",
      status: "failed",
      error: { message: "asked to fail" },
    });
    const ok = await env.sys.client.request<List>("GET", "/traces?has_error=false&workflow_id=maybe-fail");
    expect(ok.traces.map((t) => t.trace_id)).toEqual([traceIdOf(runs[1]!)]);
  });
});
