// Who is signed in, and which project the dashboard shows. A project key has its project; the admin
// key has none, so the user picks one, remembered for this tab (sessionStorage).
import { type QueryClient, queryOptions } from "@tanstack/react-query";
import { ApiError, request, setProjectId } from "./api";
import type { Session } from "./types";

const PICKED_PROJECT = "spool.project";

/** The session, or null when not signed in (401). */
export const sessionQuery = queryOptions({
  queryKey: ["session"],
  queryFn: async (): Promise<Session | null> => {
    try {
      return await request<Session>("GET", "/session");
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  },
  staleTime: 60_000,
});

export function pickedProject(): string | null {
  try {
    return sessionStorage.getItem(PICKED_PROJECT);
  } catch {
    return null;
  }
}

/** The project requests go to: the key's own, or the admin's pick. */
export function projectOf(session: Session): string | null {
  return session.kind === "project" ? session.project_id : pickedProject();
}

/** Switches project: what was cached belongs to the old one, so it goes. */
export function pickProject(queryClient: QueryClient, id: string) {
  try {
    sessionStorage.setItem(PICKED_PROJECT, id);
  } catch {
    // Private mode without storage: the pick lasts until reload.
  }
  setProjectId(id);
  queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== "session" });
}

export async function signIn(queryClient: QueryClient, apiKey: string): Promise<Session> {
  const session = await request<Session>("POST", "/session", { body: { api_key: apiKey } });
  queryClient.clear();
  queryClient.setQueryData(sessionQuery.queryKey, session);
  setProjectId(projectOf(session));
  return session;
}

export async function signOut(queryClient: QueryClient) {
  await request<void>("DELETE", "/session");
  try {
    sessionStorage.removeItem(PICKED_PROJECT);
  } catch {
    // nothing stored
  }
  setProjectId(null);
  queryClient.clear();
  queryClient.setQueryData(sessionQuery.queryKey, null);
}
