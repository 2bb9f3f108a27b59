/** Whether apps/dashboard/dist is missing or older than the dashboard's sources. */
export function dashboardIsStale(): boolean;

/** Builds the dashboard if stale; throws with Vite's output when the build fails. Returns whether it built. */
export function ensureDashboardBuilt(options?: { log?: (message: string) => void }): boolean;
