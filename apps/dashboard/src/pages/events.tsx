import { useInfiniteQuery } from "@tanstack/react-query";
import { getRouteApi, useNavigate } from "@tanstack/react-router";
import { type FormEvent, useState } from "react";
import { get } from "../api";
import { ErrorMessage } from "../components/error-message";
import { EventsTable } from "../components/events-table";
import { LiveTail } from "../components/live-tail";
import { PageHeading } from "../components/page-heading";
import { PublishForm } from "../components/publish-form";
import type { EventPage } from "../types";

const route = getRouteApi("/app/events");

export function EventsPage() {
  const { topic } = route.useSearch();
  const navigate = useNavigate();
  const [draft, setDraft] = useState(topic ?? "");
  const open = (e: FormEvent) => {
    e.preventDefault();
    void navigate({ to: "/events", search: { topic: draft.trim() || undefined } });
  };
  return (
    <>
      <PageHeading title="Events" />
      <form className="inline-form" onSubmit={open} aria-label="Choose a topic">
        <div className="field">
          <label htmlFor="topic">Topic to show</label>
          <input id="topic" value={draft} onChange={(e) => setDraft(e.target.value)} placeholder="orders" />
        </div>
        <button type="submit">Show topic</button>
      </form>
      {topic ? (
        <>
          <LiveTail key={`tail-${topic}`} topic={topic} />
          <History key={topic} topic={topic} />
        </>
      ) : (
        <p className="muted">Choose a topic to see its events and follow it live.</p>
      )}
      <PublishForm topic={topic ?? ""} />
    </>
  );
}

/** A topic's stored events, oldest first, a page at a time. */
function History({ topic }: { topic: string }) {
  const history = useInfiniteQuery({
    queryKey: ["events", topic],
    queryFn: ({ pageParam, signal }) =>
      get<EventPage>("/events", { topic, after_sequence_id: pageParam, limit: 100 }, signal),
    initialPageParam: 0,
    getNextPageParam: (last) => (last.has_more ? last.next_sequence_id : undefined),
  });
  const events = history.data?.pages.flatMap((p) => p.events) ?? [];
  return (
    <section aria-labelledby="history-h">
      <div className="section-head">
        <h2 id="history-h">History of {topic}</h2>
        <button type="button" onClick={() => history.refetch()} disabled={history.isFetching}>
          Refresh
        </button>
      </div>
      <ErrorMessage error={history.error} />
      {history.isPending ? <p>Loading events…</p> : null}
      {history.isSuccess && events.length === 0 ? (
        <p className="muted">No events on this topic yet.</p>
      ) : null}
      {events.length > 0 ? (
        <EventsTable events={events} caption={`Events of ${topic}, oldest first`} />
      ) : null}
      {history.hasNextPage ? (
        <button type="button" onClick={() => history.fetchNextPage()} disabled={history.isFetchingNextPage}>
          Load more
        </button>
      ) : null}
    </section>
  );
}
