import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useState } from "react";
import { request } from "../api";
import { ErrorMessage } from "./error-message";
import { JsonEditor, useJsonObjectField } from "./json-editor";

interface Published {
  sequence_ids: number[];
}

/** Publishes one event. What was typed stays after a failure, and after success for the next one. */
export function PublishForm({ topic: shownTopic }: { topic: string }) {
  const queryClient = useQueryClient();
  const [topic, setTopic] = useState(shownTopic);
  const [eventType, setEventType] = useState("");
  const data = useJsonObjectField("{}", "The data");
  useEffect(() => setTopic(shownTopic), [shownTopic]);

  const publish = useMutation({
    mutationFn: (body: { topic: string; event_type?: string; data: Record<string, unknown> }) =>
      request<Published>("POST", "/events/publish", { body }),
    onSuccess: (_, body) => queryClient.invalidateQueries({ queryKey: ["events", body.topic] }),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const value = data.parse();
    if (value)
      publish.mutate({ topic: topic.trim(), event_type: eventType.trim() || undefined, data: value });
  };

  return (
    <section aria-labelledby="publish-h" className="card">
      <h2 id="publish-h">Publish an event</h2>
      <form onSubmit={submit}>
        <div className="field">
          <label htmlFor="publish-topic">Topic</label>
          <input id="publish-topic" value={topic} onChange={(e) => setTopic(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="publish-type">Event type (optional)</label>
          <input id="publish-type" value={eventType} onChange={(e) => setEventType(e.target.value)} />
        </div>
        <JsonEditor id="publish-data" label="Data (JSON object)" {...data.editor} rows={4} />
        <ErrorMessage error={publish.error} />
        {publish.isSuccess ? (
          <p className="success" role="status">
            Published as sequence {publish.data.sequence_ids.join(", ")}.
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={publish.isPending}>
          {publish.isPending ? "Publishing…" : "Publish"}
        </button>
      </form>
    </section>
  );
}
