// A local stand-in for an LLM: an HTTP server speaking the OpenAI chat-completions protocol (JSON
// and streamed SSE, text and tool calls), answering from a queue of scripted replies and recording
// every request. The real AI SDK client talks to it over HTTP; nothing in the client is mocked.
// Like OpenAI it streams a tool call's JSON arguments in fragments (the client assembles them),
// sends usage in a stream only when asked (`stream_options.include_usage`), and calls no tools when
// told `tool_choice: "none"`.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
}

/** One reply. `text` is streamed in `chunks` pieces (default: word by word). */
export interface ScriptedReply {
  text?: string;
  chunks?: string[];
  toolCalls?: ScriptedToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer only once this settles: a test holds the model until what it watches is ready. */
  hold?: Promise<unknown>;
  /** When streaming, wait this long between chunks. */
  chunkDelayMs?: number;
  /**
   * When streaming, cut the connection after this many text chunks (a network failure mid-answer).
   * Give `chunkDelayMs` too, so the chunks before the cut reach the client first.
   */
  dropAfterChunks?: number;
}

export interface RecordedRequest {
  path: string;
  body: {
    model: string;
    stream?: boolean;
    messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
    tools?: { type: string; function: { name: string; description?: string; parameters: unknown } }[];
    tool_choice?: unknown;
    stream_options?: { include_usage?: boolean };
    [key: string]: unknown;
  };
}

export interface TestLlm {
  /** Base URL to give the client, e.g. `http://127.0.0.1:1234/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** Queues replies, answered in order, one per request. */
  script(...replies: ScriptedReply[]): void;
  /** Replies not yet used. */
  pending(): number;
  reset(): void;
  close(): Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface TestLlmOptions {
  port?: number;
  host?: string;
  /** Answers a request when no scripted reply is left (default: a 500 error). */
  fallback?: (body: RecordedRequest["body"]) => ScriptedReply;
}

export async function startTestLlm(options: TestLlmOptions = {}): Promise<TestLlm> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];
  let callSeq = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: "server_error" } });
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      return sendJson(res, 404, {
        error: { message: `no route ${req.method} ${req.url}`, type: "not_found" },
      });
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString()) as RecordedRequest["body"];
    requests.push({ path: req.url, body });
    const reply = queue.shift() ?? options.fallback?.(body);
    if (!reply) {
      return sendJson(res, 500, {
        error: { message: "test LLM: no scripted reply left", type: "server_error" },
      });
    }
    if (reply.hold) await reply.hold;
    if (reply.delayMs) await pause(reply.delayMs);
    if (reply.status && reply.status >= 400) {
      return sendJson(res, reply.status, {
        error: { message: reply.text ?? "scripted failure", type: "invalid_request_error" },
      });
    }
    const id = `chatcmpl-${++callSeq}`;
    // A model told not to call tools answers in text: a scripted reply's tool calls are left out.
    const scriptedCalls = body.tool_choice === "none" ? [] : (reply.toolCalls ?? []);
    const toolCalls = scriptedCalls.map((tc, i) => ({
      id: tc.id ?? `call_${callSeq}_${i + 1}`,
      type: "function" as const,
      function: { name: tc.name, arguments: JSON.stringify(tc.arguments) },
    }));
    const finish = toolCalls.length > 0 ? "tool_calls" : "stop";
    const text = reply.text ?? "";
    const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
    const usageJson = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const base = { id, created: Math.floor(Date.now() / 1000), model: body.model };

    if (!body.stream) {
      return sendJson(res, 200, {
        ...base,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: text || null,
              ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
            },
            finish_reason: finish,
          },
        ],
        usage: usageJson,
      });
    }

    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
      send({
        ...base,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
    chunk({ role: "assistant", content: "" });
    const pieces = reply.chunks ?? (text ? (text.match(/\S+\s*/g) ?? [text]) : []);
    for (const [i, piece] of pieces.entries()) {
      if (reply.chunkDelayMs) await pause(reply.chunkDelayMs);
      if (i === reply.dropAfterChunks) return void res.destroy();
      chunk({ content: piece });
    }
    for (const [index, tc] of toolCalls.entries()) {
      // As OpenAI does: id and name first with empty arguments, then the JSON in fragments.
      chunk({
        tool_calls: [
          { index, id: tc.id, type: tc.type, function: { name: tc.function.name, arguments: "" } },
        ],
      });
      for (const fragment of fragments(tc.function.arguments)) {
        chunk({ tool_calls: [{ index, function: { arguments: fragment } }] });
      }
    }
    chunk({}, finish);
    if (body.stream_options?.include_usage) {
      send({ ...base, object: "chat.completion.chunk", choices: [], usage: usageJson });
    }
    res.end("data: [DONE]\n\n");
  }

  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => queue.push(...replies),
    pending: () => queue.length,
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A tool call's JSON arguments in pieces of a few characters, for the client to join. */
function fragments(json: string, size = 7): string[] {
  const out: string[] = [];
  for (let i = 0; i < json.length; i += size) out.push(json.slice(i, i + size));
  return out;
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
