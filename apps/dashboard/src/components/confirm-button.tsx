import { useState } from "react";

interface Props {
  label: string;
  /** The question asked before acting, e.g. "Delete this schedule?". */
  question: string;
  confirmLabel: string;
  onConfirm: () => void;
  pending?: boolean;
  danger?: boolean;
}

/** A destructive action asks first, in the page (no window.confirm), and keeps focus on its buttons. */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, pending, danger = true }: Props) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className={danger ? "danger" : undefined} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm">
      <span>{question}</span>
      <button
        type="button"
        className={danger ? "danger" : undefined}
        disabled={pending}
        // biome-ignore lint/a11y/noAutofocus: focus follows the question the user just asked for.
        autoFocus
        onClick={() => {
          onConfirm();
          setAsking(false);
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        No
      </button>
    </span>
  );
}
