import type { SpoolEvent } from "../types";
import { DataTable } from "./data-table";
import { JsonView } from "./json-view";
import { Time } from "./time";

export function EventsTable({ events, caption }: { events: SpoolEvent[]; caption: string }) {
  return (
    <DataTable
      caption={caption}
      rows={events}
      rowKey={(e) => e.id}
      columns={[
        { label: "Sequence", cell: (e) => e.sequence_id },
        { label: "Type", cell: (e) => e.event_type ?? <span className="muted">—</span> },
        { label: "Data", className: "data-cell", cell: (e) => <JsonView value={e.data} /> },
        { label: "Published", cell: (e) => <Time iso={e.created_at} /> },
      ]}
    />
  );
}
