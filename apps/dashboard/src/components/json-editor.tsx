import { useId, useState } from "react";
import { parseJsonObject } from "../format";

interface Props {
  label: string;
  value: string;
  onChange: (text: string) => void;
  /** Why the text was refused, shown under the field and tied to it for screen readers. */
  invalid?: string | null;
  hint?: string;
  rows?: number;
  id?: string;
}

/** A labelled textarea for JSON. It never clears itself: what was typed survives a failed request. */
export function JsonEditor({ label, value, onChange, invalid, hint, rows = 6, id }: Props) {
  const generated = useId();
  const fieldId = id ?? generated;
  const hintId = `${fieldId}-hint`;
  const errorId = `${fieldId}-error`;
  const describedBy = [hint ? hintId : null, invalid ? errorId : null].filter(Boolean).join(" ");
  return (
    <div className="field">
      <label htmlFor={fieldId}>{label}</label>
      <textarea
        id={fieldId}
        className="code"
        rows={rows}
        spellCheck={false}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={invalid ? true : undefined}
        aria-describedby={describedBy || undefined}
      />
      {hint ? (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
      {invalid ? (
        <p className="error" role="alert" id={errorId}>
          {invalid}
        </p>
      ) : null}
    </div>
  );
}

/**
 * The text of a JSON-object editor and why it was refused. `parse` answers the object, or shows why
 * the text is not one and answers undefined; `refuse` shows another reason (a form's own check).
 */
export function useJsonObjectField(initial: string, what: string) {
  const [text, setText] = useState(initial);
  const [invalid, setInvalid] = useState<string | null>(null);
  const parse = (): Record<string, unknown> | undefined => {
    const parsed = parseJsonObject(text, what);
    setInvalid(parsed.ok ? null : parsed.message);
    return parsed.ok ? parsed.value : undefined;
  };
  return { editor: { value: text, onChange: setText, invalid }, parse, refuse: setInvalid };
}
