import { formatDateTime, formatRelative } from "../format";

/** A timestamp: absolute, or relative ("2 min ago") with the absolute time as its title. */
export function Time({ iso, relative = false }: { iso: string | null | undefined; relative?: boolean }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {relative ? formatRelative(iso) : formatDateTime(iso)}
    </time>
  );
}
