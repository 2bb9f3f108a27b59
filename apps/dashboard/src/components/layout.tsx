import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, Outlet, useNavigate, useRouterState } from "@tanstack/react-router";
import { useEffect, useRef, useState } from "react";
import { errorText, get } from "../api";
import { shortId } from "../format";
import { projectOf, sessionQuery, signOut } from "../session";
import type { Page, Project } from "../types";
import { ErrorMessage } from "./error-message";

const NAV = [
  { to: "/runs", label: "Runs" },
  { to: "/workflows", label: "Workflows" },
  { to: "/events", label: "Events" },
  { to: "/triggers", label: "Triggers & schedules" },
  { to: "/workers", label: "Workers & queues" },
] as const;

/** The signed-in frame: skip link, header with the navigation, and the page in <main>. */
export function Layout() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const session = useQuery(sessionQuery);
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const href = useRouterState({ select: (s) => s.location.href });
  const [menuOpen, setMenuOpen] = useState(false);
  const [signOutError, setSignOutError] = useState<unknown>(null);
  const shownPath = useRef(pathname);
  const signingOut = useRef(false);

  // A session that ends while the page is open (expired cookie, revoked key) sends the user to sign
  // in, and back here after.
  useEffect(() => {
    if (session.data === null && !signingOut.current) {
      void navigate({ to: "/sign-in", search: { redirect: href } });
    }
  }, [session.data, navigate, href]);

  // Going to another page closes the menu (the page's heading takes focus: PageHeading).
  useEffect(() => {
    if (shownPath.current === pathname) return;
    shownPath.current = pathname;
    setMenuOpen(false);
  }, [pathname]);

  const project = session.data ? projectOf(session.data) : null;
  // The admin key sees every project: name the one picked (a project key's is just its id).
  const projects = useQuery({
    queryKey: ["projects"],
    queryFn: () => get<Page<"projects", Project>>("/projects", { limit: 500 }),
    enabled: session.data?.kind === "admin",
  });
  const projectName =
    projects.data?.projects.find((p) => p.id === project)?.name ?? (project ? shortId(project) : null);
  const onSignOut = async () => {
    setSignOutError(null);
    signingOut.current = true;
    try {
      await signOut(queryClient);
      await navigate({ to: "/sign-in", search: { redirect: undefined } });
    } catch (err) {
      signingOut.current = false;
      setSignOutError(errorText(err));
    }
  };

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar-row">
          <Link to="/runs" className="brand">
            Spool
          </Link>
          <button
            type="button"
            className="menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="site-nav"
            onClick={() => setMenuOpen((o) => !o)}
          >
            Menu
          </button>
        </div>
        <nav id="site-nav" aria-label="Main" className={menuOpen ? "open" : undefined}>
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} activeProps={{ "aria-current": "page", className: "active" }}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
          <div className="account">
            {session.data?.kind === "admin" ? (
              <Link to="/projects" className="project-link">
                Project: {projectName ?? "none"} (switch)
              </Link>
            ) : project ? (
              <span className="project-link" title={project}>
                Project {shortId(project)}
              </span>
            ) : null}
            <button type="button" onClick={onSignOut}>
              Sign out
            </button>
          </div>
        </nav>
        <ErrorMessage error={signOutError} />
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}
