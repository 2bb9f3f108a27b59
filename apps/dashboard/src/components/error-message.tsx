import { errorText } from "../api";

/** A failed request or a refused input, announced to screen readers as it appears. */
export function ErrorMessage({ error, id }: { error: unknown; id?: string }) {
  if (!error) return null;
  return (
    <p className="error" role="alert" id={id}>
      {errorText(error)}
    </p>
  );
}
