import { defineAgent, defineTool, type ModelConfig } from "@spool/sdk";
import { z } from "zod";

// A tiny local corpus, so the example needs no search API: the model is the only outside service.
const NOTES = [
  {
    id: "n1",
    title: "Durable execution",
    text: "A durable run survives crashes: finished steps are stored and never re-run.",
  },
  {
    id: "n2",
    title: "Agents",
    text: "An agent loops: call the model, run the tools it asks for, feed results back.",
  },
  {
    id: "n3",
    title: "Human in the loop",
    text: "Risky tool calls wait for a person to approve or reject them.",
  },
];

export const searchNotes = defineTool(
  {
    id: "search-notes",
    description: "Search the team's research notes; returns matching notes with their text",
    input: z.object({ query: z.string().describe("words to look for") }),
  },
  async ({ query }) => {
    const words = query.toLowerCase().split(/\W+/).filter(Boolean);
    return NOTES.filter((n) => words.some((w) => `${n.title} ${n.text}`.toLowerCase().includes(w)));
  },
);

/** Needs a person's approval: the run suspends until `resume` with `{"approved": true|false, "feedback"?}`. */
export const publishReport = defineTool(
  {
    id: "publish-report",
    description: "Publish a finished report to the team wiki",
    input: z.object({ title: z.string(), body: z.string() }),
    approval: "always",
  },
  async ({ title }, ctx) => ({
    published: true,
    title,
    url: `https://wiki.example/reports/${ctx.execution.id}`,
  }),
);

// Any OpenAI-compatible endpoint by default (SPOOL_LLM_BASE_URL, key in SPOOL_LLM_API_KEY if it
// needs one); SPOOL_LLM_PROVIDER=openai or anthropic switches to those APIs (OPENAI_API_KEY,
// ANTHROPIC_API_KEY).
const model: ModelConfig = {
  provider: (process.env.SPOOL_LLM_PROVIDER as ModelConfig["provider"] | undefined) ?? "openai-compatible",
  model: process.env.SPOOL_LLM_MODEL ?? "gpt-4o-mini",
};

export const researchAgent = defineAgent({
  id: "research-agent",
  model,
  systemPrompt:
    "You are a research assistant. Search the notes before answering, cite note ids, and when asked " +
    "for a report, publish it with publish-report. If publishing is rejected, say so and why.",
  tools: [searchNotes, publishReport],
  maxSteps: 8,
});
