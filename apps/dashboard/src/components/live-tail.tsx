import { useEffect, useState } from "react";
import { errorText, readEventStream } from "../api";
import type { SpoolEvent } from "../types";
import { ErrorMessage } from "./error-message";
import { EventsTable } from "./events-table";

/** Newest first; the oldest fall off so a busy topic cannot grow the page without end. */
const KEEP = 200;
const RECONNECT_MS = 2000;

type State = "off" | "connecting" | "live" | "error";

/** Follows a topic over Server-Sent Events from the next new event, while switched on. */
export function LiveTail({ topic }: { topic: string }) {
  const [on, setOn] = useState(false);
  const [state, setState] = useState<State>("off");
  const [events, setEvents] = useState<SpoolEvent[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!on) {
      setState("off");
      return;
    }
    const abort = new AbortController();
    let last = 0;
    void (async () => {
      while (!abort.signal.aborted) {
        setState("connecting");
        try {
          await readEventStream(
            { topic, last_sequence_id: last || undefined },
            abort.signal,
            (m) => {
              if (!m.data) return;
              const e = JSON.parse(m.data) as SpoolEvent;
              last = Math.max(last, e.sequence_id);
              setEvents((prev) => [e, ...prev].slice(0, KEEP));
            },
            () => {
              setError(null);
              setState("live");
            },
          );
        } catch (err) {
          if (abort.signal.aborted) return;
          setError(errorText(err));
          setState("error");
        }
        await new Promise((r) => setTimeout(r, RECONNECT_MS));
      }
    })();
    return () => abort.abort();
  }, [on, topic]);

  const says = {
    off: "Off.",
    connecting: "Connecting…",
    live: "Live: new events appear here as they are published.",
    error: "Interrupted; reconnecting…",
  }[state];

  return (
    <section aria-labelledby="tail-h">
      <div className="section-head">
        <h2 id="tail-h">Live tail</h2>
        <button type="button" aria-pressed={on} onClick={() => setOn((o) => !o)}>
          {on ? "Stop live tail" : "Start live tail"}
        </button>
      </div>
      <p className="muted" aria-live="polite" data-testid="tail-state">
        {says}
      </p>
      {state === "error" ? <ErrorMessage error={error} /> : null}
      {events.length > 0 ? (
        <EventsTable events={events} caption={`Live events of ${topic}, newest first`} />
      ) : null}
    </section>
  );
}
