import { pretty } from "../format";

/** JSON as indented text, scrolling inside its box rather than widening the page. */
export function JsonView({ value }: { value: unknown }) {
  if (value === undefined || value === null) return <p className="muted">none</p>;
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must be reachable by keyboard to scroll it.
    <pre className="json" tabIndex={0}>
      {pretty(value)}
    </pre>
  );
}
