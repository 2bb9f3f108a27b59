// Builds the dashboard (apps/dashboard → apps/dashboard/dist, which the API serves at /) when its
// build is missing or older than its sources. Used by `npm run dev` and by the dashboard's tests, so
// `npm ci && npm run dev` serves it on a fresh clone.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const appDir = fileURLToPath(new URL("../apps/dashboard/", import.meta.url));
const builtIndex = join(appDir, "dist", "index.html");
/** The modules of @spool/shared whose values the dashboard bundles (apps/dashboard/src/types.ts). */
const sharedModules = ["execution-status.ts", "topics.ts"].map((f) =>
  fileURLToPath(new URL(`../packages/shared/src/${f}`, import.meta.url)),
);

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether dist is missing or older than src, index.html, the Vite config or the shared modules it bundles. */
export function dashboardIsStale() {
  if (!existsSync(builtIndex)) return true;
  const sources = Math.max(
    newestSource(join(appDir, "src")),
    statSync(join(appDir, "index.html")).mtimeMs,
    statSync(join(appDir, "vite.config.ts")).mtimeMs,
    ...sharedModules.map((f) => statSync(f).mtimeMs),
  );
  return sources > statSync(builtIndex).mtimeMs;
}

/** Builds it if stale; throws with Vite's output when the build fails. Returns whether it built. */
export function ensureDashboardBuilt({ log = () => {} } = {}) {
  if (!dashboardIsStale()) return false;
  log("building the dashboard (apps/dashboard)");
  const vite = join(appDir, "node_modules", ".bin", "vite");
  const bin = existsSync(vite) ? vite : fileURLToPath(new URL("../node_modules/.bin/vite", import.meta.url));
  // A production bundle whoever calls: under vitest NODE_ENV is "test", and Vite would then bundle
  // React's development build (StrictMode's double effects, twice the size), which dev then serves.
  const run = spawnSync(bin, ["build", "--logLevel", "warn"], {
    cwd: appDir,
    encoding: "utf8",
    env: { ...process.env, NODE_ENV: "production" },
  });
  if (run.status !== 0) throw new Error(`the dashboard build failed:\n${run.stdout}${run.stderr}`);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureDashboardBuilt({ log: (m) => console.log(`[dashboard] ${m}`) });
}
