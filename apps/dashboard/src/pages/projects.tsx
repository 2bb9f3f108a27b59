import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useNavigate } from "@tanstack/react-router";
import { get } from "../api";
import { ErrorMessage } from "../components/error-message";
import { PageHeading } from "../components/page-heading";
import { Time } from "../components/time";
import { pickedProject, pickProject, sessionQuery } from "../session";
import type { Page, Project } from "../types";

/** The admin key belongs to no project: the user picks the one to look at. */
export function ProjectsPage() {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const session = useQuery(sessionQuery);
  const isAdmin = session.data?.kind === "admin";
  const projects = useQuery({
    queryKey: ["projects"],
    queryFn: () => get<Page<"projects", Project>>("/projects", { limit: 500 }),
    enabled: isAdmin,
  });
  const current = pickedProject();

  if (session.data?.kind === "project") {
    return (
      <>
        <PageHeading title="Project" />
        <p>
          Your key belongs to project <code>{session.data.project_id}</code>. Sign in with the admin key to
          look at other projects.
        </p>
      </>
    );
  }

  return (
    <>
      <PageHeading title="Choose a project" />
      <p>You signed in with the admin key, which belongs to no project. Pick the project to look at.</p>
      <ErrorMessage error={projects.error} />
      {projects.isPending ? <p aria-live="polite">Loading projects…</p> : null}
      {projects.data && projects.data.projects.length === 0 ? <p>There are no projects yet.</p> : null}
      <ul className="project-list">
        {projects.data?.projects.map((p) => (
          <li key={p.id} className="card">
            <div>
              <strong>{p.name}</strong> {p.id === current ? <span className="badge">current</span> : null}
              <div className="muted">
                <code>{p.id}</code> · created <Time iso={p.created_at} relative />
              </div>
              {p.description ? <p>{p.description}</p> : null}
            </div>
            <button
              type="button"
              className="primary"
              onClick={() => {
                pickProject(queryClient, p.id);
                void navigate({ to: "/runs" });
              }}
            >
              Open {p.name}
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}
