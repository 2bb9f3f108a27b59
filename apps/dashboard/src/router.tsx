// The dashboard's pages and their URLs. Filters live in the URL (search params), so a filtered list
// can be bookmarked and shared.
import type { QueryClient } from "@tanstack/react-query";
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  Outlet,
  redirect,
} from "@tanstack/react-router";
import { setProjectId } from "./api";
import { Layout } from "./components/layout";
import { EventsPage } from "./pages/events";
import { NotFoundPage } from "./pages/not-found";
import { ProjectsPage } from "./pages/projects";
import { RunPage } from "./pages/run";
import { RunsPage } from "./pages/runs";
import { SignInPage } from "./pages/sign-in";
import { TriggersPage } from "./pages/triggers";
import { WorkersPage } from "./pages/workers";
import { WorkflowsPage } from "./pages/workflows";
import { projectOf, sessionQuery } from "./session";
import type { ExecutionStatus } from "./types";
import { STATUSES } from "./types";

const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFoundPage,
});

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: "/sign-in",
  validateSearch: (s: Record<string, unknown>): { redirect?: string } => ({ redirect: text(s.redirect) }),
  component: SignInPage,
});

/** Every page but sign-in: needs a session, and a project to show. */
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: "app",
  beforeLoad: async ({ context, location }) => {
    const session = await context.queryClient.ensureQueryData(sessionQuery);
    if (!session) throw redirect({ to: "/sign-in", search: { redirect: location.href } });
    const project = projectOf(session);
    setProjectId(project);
    if (!project && location.pathname !== "/projects") throw redirect({ to: "/projects" });
    return { session };
  },
  component: Layout,
});

const indexRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/",
  beforeLoad: () => {
    throw redirect({ to: "/runs" });
  },
});

const projectsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/projects",
  component: ProjectsPage,
});

export interface RunsSearch {
  workflow_id?: string;
  status?: ExecutionStatus;
  created_after?: string;
  created_before?: string;
  /** Only the children of this run. */
  parent_execution_id?: string;
}

const runsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/runs",
  validateSearch: (s: Record<string, unknown>): RunsSearch => ({
    workflow_id: text(s.workflow_id),
    status: STATUSES.find((x) => x === s.status),
    created_after: text(s.created_after),
    created_before: text(s.created_before),
    parent_execution_id: text(s.parent_execution_id),
  }),
  component: RunsPage,
});

const runRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/runs/$runId",
  component: RunPage,
});

const workflowsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/workflows",
  validateSearch: (s: Record<string, unknown>): { run?: string } => ({ run: text(s.run) }),
  component: WorkflowsPage,
});

const eventsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/events",
  validateSearch: (s: Record<string, unknown>): { topic?: string } => ({ topic: text(s.topic) }),
  component: EventsPage,
});

const triggersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/triggers",
  component: TriggersPage,
});

const workersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/workers",
  component: WorkersPage,
});

const routeTree = rootRoute.addChildren([
  signInRoute,
  appRoute.addChildren([
    indexRoute,
    projectsRoute,
    runsRoute,
    runRoute,
    workflowsRoute,
    eventsRoute,
    triggersRoute,
    workersRoute,
  ]),
]);

export function createAppRouter(queryClient: QueryClient) {
  return createRouter({
    routeTree,
    context: { queryClient },
    defaultPreload: false,
    scrollRestoration: true,
  });
}

declare module "@tanstack/react-router" {
  interface Register {
    router: ReturnType<typeof createAppRouter>;
  }
}
