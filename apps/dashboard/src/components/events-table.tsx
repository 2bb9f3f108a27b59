import type { SpoolEvent } from "../types";
import { JsonView } from "./json-view";
import { Time } from "./time";

export function EventsTable({ events, caption }: { events: SpoolEvent[]; caption: string }) {
  return (
    <div className="table-wrap">
      <table className="stack-on-phone">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Sequence</th>
            <th scope="col">Type</th>
            <th scope="col">Data</th>
            <th scope="col">Published</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.id}>
              <td data-label="Sequence">{e.sequence_id}</td>
              <td data-label="Type">{e.event_type ?? <span className="muted">—</span>}</td>
              <td data-label="Data" className="data-cell">
                <JsonView value={e.data} />
              </td>
              <td data-label="Published">
                <Time iso={e.created_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
