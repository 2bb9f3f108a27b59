import { useQuery } from "@tanstack/react-query";
import { useEffect, useReducer, useState } from "react";
import { errorText, get, readEventStream } from "../api";
import { applyEvent, emptyStream, type StreamEvent, type StreamState } from "../run-stream-state";
import { type EventPage, type Execution, isTerminal, runTopic, type Workflow } from "../types";
import { ErrorMessage } from "./error-message";
import { JsonView } from "./json-view";

type Action = { type: "events"; events: StreamEvent[] } | { type: "reset" };

const reduce = (state: StreamState, a: Action): StreamState =>
  a.type === "reset" ? emptyStream : a.events.reduce(applyEvent, state);

/** Most history pages read for a finished run (500 events each). */
const MAX_HISTORY_PAGES = 20;
const RECONNECT_MS = 2000;

type Connection = "connecting" | "live" | "history" | "error";

/**
 * A run's stream: for a run still going, Server-Sent Events from the stream's beginning, so text
 * shows as the model writes it; for a finished one, the stored history.
 */
function useRunStream(run: Execution) {
  const [state, dispatch] = useReducer(reduce, emptyStream);
  const [connection, setConnection] = useState<Connection>("connecting");
  const [error, setError] = useState<string | null>(null);
  // Decided once: a run that finishes while watched keeps its open stream.
  const [finishedAtStart] = useState(() => isTerminal(run.status));
  const { id, workflow_id } = run;

  useEffect(() => {
    const abort = new AbortController();
    dispatch({ type: "reset" });
    setError(null);
    if (finishedAtStart) {
      void (async () => {
        try {
          let after = 0;
          for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
            const p = await get<EventPage>(
              "/events",
              { topic: runTopic(workflow_id, id), after_sequence_id: after, limit: 500 },
              abort.signal,
            );
            dispatch({ type: "events", events: p.events as StreamEvent[] });
            if (!p.has_more) break;
            after = p.next_sequence_id;
          }
          setConnection("history");
        } catch (err) {
          if (!abort.signal.aborted) {
            setError(errorText(err));
            setConnection("error");
          }
        }
      })();
      return () => abort.abort();
    }
    let last = 0;
    const connect = async () => {
      while (!abort.signal.aborted) {
        setConnection("connecting");
        try {
          // workflow_id + workflow_run_id: a run's stream starts at its beginning (a topic's at the next event).
          await readEventStream(
            { workflow_id, workflow_run_id: id, last_sequence_id: last || undefined },
            abort.signal,
            (m) => {
              if (!m.data) return;
              const event = JSON.parse(m.data) as StreamEvent;
              last = Math.max(last, event.sequence_id);
              dispatch({ type: "events", events: [event] });
            },
            () => setConnection("live"),
          );
        } catch (err) {
          if (abort.signal.aborted) return;
          setError(errorText(err));
          setConnection("error");
        }
        // The server ended the stream or it broke: pick up after the last event seen.
        await new Promise((r) => setTimeout(r, RECONNECT_MS));
      }
    };
    void connect();
    return () => abort.abort();
  }, [id, workflow_id, finishedAtStart]);

  return { state, connection, error };
}

export function RunStream({ run }: { run: Execution }) {
  const { state, connection, error } = useRunStream(run);
  const workflow = useQuery({
    queryKey: ["workflow", run.workflow_id],
    queryFn: () => get<Workflow>(`/workflows/${encodeURIComponent(run.workflow_id)}`),
    staleTime: 60_000,
    retry: false,
  });
  const isAgent = workflow.data?.workflow_type === "agent";
  const empty = state.turns.length === 0 && state.other.length === 0;
  // A run that streams nothing (most workflows) shows no empty panel.
  if (empty && !isAgent) return null;

  const status = {
    connecting: "Connecting to the live stream…",
    live: isTerminal(run.status) ? "Stream complete." : "Live: text appears as the model writes it.",
    history: "Recorded stream of the finished run.",
    error: "The stream was interrupted; reconnecting…",
  }[connection];

  return (
    <section aria-labelledby="stream-h" className="card">
      <h2 id="stream-h">Live stream</h2>
      <p className="muted" aria-live="polite">
        {status}
      </p>
      {connection === "error" ? <ErrorMessage error={error} /> : null}
      {empty ? <p className="muted">Nothing streamed yet.</p> : null}
      <ol className="stream" aria-label="Model output">
        {state.turns.map((t) => (
          <li key={t.stepKey} className="turn">
            <p className="turn-head">
              <span className="tag">{t.stepKey}</span>
              {t.usage?.total_tokens !== undefined ? (
                <span className="muted"> {t.usage.total_tokens} tokens</span>
              ) : null}
            </p>
            {t.text ? <p className="stream-text">{t.text}</p> : null}
            {t.toolCalls.map((c) => (
              <p key={c.id || c.name} className="tool-call">
                Tool call: <strong>{c.name}</strong> <code className="wrap">{JSON.stringify(c.input)}</code>
              </p>
            ))}
          </li>
        ))}
      </ol>
      {state.finish ? (
        <p className="finish">
          Finished ({state.finish.stopped === "max_steps" ? "step budget used up" : "final answer"})
          {state.finish.usage?.total_tokens !== undefined
            ? `, ${state.finish.usage.total_tokens} tokens in all`
            : ""}
          .
        </p>
      ) : null}
      {state.other.length > 0 ? (
        <details>
          <summary>Other events ({state.other.length})</summary>
          <JsonView value={state.other} />
        </details>
      ) : null}
    </section>
  );
}
