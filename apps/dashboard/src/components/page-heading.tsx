import { useRouterState } from "@tanstack/react-router";
import { type ReactNode, useEffect, useRef } from "react";

/** The path whose heading was shown last; null until the first page has been shown. */
let shownPath: string | null = null;
/** The page a navigation arrived at, whose heading should have focus. */
let focusPath: string | null = null;

/**
 * A page's h1, which also names the browser tab. After a navigation (not on the first page loaded)
 * it takes focus, where a screen reader starts after a full page load; tabIndex -1 makes that
 * possible without adding it to the tab order.
 */
export function PageHeading({ title, children }: { title: string; children?: ReactNode }) {
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Spool`;
  }, [title]);
  useEffect(() => {
    const arrived = shownPath !== null && shownPath !== pathname;
    shownPath = pathname;
    if (arrived) focusPath = pathname;
    // The router can mount a page twice on arrival, removing the heading that took focus: the new one
    // takes it then, unless focus has gone somewhere on purpose.
    if (focusPath === pathname && (arrived || document.activeElement === document.body)) {
      heading.current?.focus();
    }
  }, [pathname]);
  return (
    <div className="page-heading">
      <h1 tabIndex={-1} ref={heading}>
        {title}
      </h1>
      {children}
    </div>
  );
}
