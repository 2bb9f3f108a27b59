import { Link } from "@tanstack/react-router";
import { formatDuration } from "../format";
import type { Span } from "../types";
import { JsonView } from "./json-view";

const num = (v: unknown) => (typeof v === "number" ? v : null);
const str = (v: unknown) => (typeof v === "string" ? v : null);

/** The one line a span's row shows: model, tokens and latency of an LLM call; the tool of a tool call. */
export function spanSummary(s: Span): string {
  const a = s.attributes;
  if (s.span_type === "llm") {
    const parts = [
      str(a["llm.model"]),
      num(a["llm.usage.total_tokens"]) !== null ? `${a["llm.usage.total_tokens"]} tokens` : null,
      num(a["llm.tool_calls"])
        ? `${a["llm.tool_calls"]} tool call${a["llm.tool_calls"] === 1 ? "" : "s"}`
        : null,
    ].filter(Boolean);
    return parts.length ? ` · ${parts.join(" · ")}` : "";
  }
  if (s.span_type === "tool" && str(a.tool_id)) return ` · ${a.tool_id}`;
  const status = str(a.status) ?? null;
  return status ? ` · ${status}` : "";
}

/** An AI SDK message's content: a string, or parts (text, tool calls, tool results). */
function MessageContent({ content }: { content: unknown }) {
  if (typeof content === "string") return <p className="message-text">{content}</p>;
  if (!Array.isArray(content)) return <JsonView value={content} />;
  return (
    <>
      {content.map((part: Record<string, unknown>, i) => {
        const key = `${i}-${String(part.type)}`;
        if (part.type === "text") {
          return (
            <p key={key} className="message-text">
              {String(part.text)}
            </p>
          );
        }
        if (part.type === "tool-call") {
          return (
            <div key={key}>
              <p>
                Calls <strong>{String(part.toolName)}</strong> with:
              </p>
              <JsonView value={part.input} />
            </div>
          );
        }
        if (part.type === "tool-result") {
          return (
            <div key={key}>
              <p>
                Result of <strong>{String(part.toolName)}</strong>:
              </p>
              <JsonView value={part.output} />
            </div>
          );
        }
        return <JsonView key={key} value={part} />;
      })}
    </>
  );
}

function LlmDetails({ span: s }: { span: Span }) {
  const a = s.attributes;
  const input = (s.input ?? {}) as { system?: unknown; messages?: unknown };
  const output = (s.output ?? {}) as { text?: unknown; tool_calls?: unknown };
  const messages = Array.isArray(input.messages)
    ? (input.messages as { role?: unknown; content?: unknown }[])
    : [];
  const latency = num(a["llm.latency_ms"]);
  return (
    <>
      <dl className="summary compact">
        <div>
          <dt>Model</dt>
          <dd>
            {str(a["llm.model"]) ?? "unknown"}
            {str(a["llm.provider"]) ? ` (${a["llm.provider"]})` : ""}
          </dd>
        </div>
        <div>
          <dt>Tokens</dt>
          <dd>
            {num(a["llm.usage.input_tokens"]) ?? "?"} in, {num(a["llm.usage.output_tokens"]) ?? "?"} out,{" "}
            {num(a["llm.usage.total_tokens"]) ?? "?"} total
          </dd>
        </div>
        <div>
          <dt>Latency</dt>
          <dd>{latency !== null ? formatDuration(latency) : "—"}</dd>
        </div>
        <div>
          <dt>Finish reason</dt>
          <dd>{str(a["llm.finish_reason"]) ?? "—"}</dd>
        </div>
      </dl>
      <h4>Messages sent</h4>
      {typeof input.system === "string" ? (
        <div className="message message-system">
          <p className="message-role">system</p>
          <p className="message-text">{input.system}</p>
        </div>
      ) : null}
      {messages.length === 0 ? <p className="muted">Not recorded.</p> : null}
      {messages.map((m, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: messages are a fixed history, never reordered.
        <div key={i} className={`message message-${String(m.role)}`}>
          <p className="message-role">{String(m.role)}</p>
          <MessageContent content={m.content} />
        </div>
      ))}
      <h4>Response</h4>
      {typeof output.text === "string" && output.text ? (
        <p className="message-text">{output.text}</p>
      ) : (
        <p className="muted">No text.</p>
      )}
      {Array.isArray(output.tool_calls) && output.tool_calls.length > 0 ? (
        <>
          <p>Tool calls:</p>
          <JsonView value={output.tool_calls} />
        </>
      ) : null}
    </>
  );
}

/** Everything recorded on a span: LLM calls get their own reading, the rest their JSON. */
export function SpanDetails({ span: s }: { span: Span }) {
  const executionId = str(s.attributes.execution_id);
  return (
    <>
      {s.span_type === "llm" ? (
        <LlmDetails span={s} />
      ) : (
        <>
          {s.input !== null ? (
            <>
              <h4>Input</h4>
              <JsonView value={s.input} />
            </>
          ) : null}
          {s.output !== null ? (
            <>
              <h4>Output</h4>
              <JsonView value={s.output} />
            </>
          ) : null}
        </>
      )}
      {s.error !== null ? (
        <>
          <h4>Error</h4>
          <JsonView value={s.error} />
        </>
      ) : null}
      {executionId ? (
        <p>
          <Link to="/runs/$runId" params={{ runId: executionId }}>
            Open this run
          </Link>
        </p>
      ) : null}
      <details>
        <summary>Attributes</summary>
        <JsonView value={s.attributes} />
      </details>
    </>
  );
}
