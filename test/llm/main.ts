// The test LLM as a standalone server, for trying agents without a real model:
//   node --import tsx test/llm/main.ts        (PORT, default 4010)
// With no script it plays a simple researcher: first it calls the first tool that takes one string
// (with the user's message), then it answers with what the tools returned.
import { type RecordedRequest, type ScriptedReply, startTestLlm } from "./server.js";

function researcher(body: RecordedRequest["body"]): ScriptedReply {
  const msgs = body.messages;
  const asked = String([...msgs].reverse().find((m) => m.role === "user")?.content ?? "");
  const results = msgs.filter((m) => m.role === "tool").map((m) => String(m.content));
  if (results.length > 0) return { text: `Here is what the tools said: ${results.join(" | ")}` };
  const tool = body.tools?.find((t) => {
    const p = t.function.parameters as {
      required?: string[];
      properties?: Record<string, { type?: string }>;
    };
    return p.required?.length === 1 && p.properties?.[p.required[0]!]?.type === "string";
  });
  if (!tool) return { text: `You said: ${asked}` };
  const arg = (tool.function.parameters as { required: string[] }).required[0]!;
  return { toolCalls: [{ name: tool.function.name, arguments: { [arg]: asked } }] };
}

const port = Number(process.env.PORT ?? 4010);
const llm = await startTestLlm({ port, fallback: researcher });
console.log(`test LLM listening: SPOOL_LLM_BASE_URL=${llm.url}`);
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => void llm.close().then(() => process.exit(0)));
