#!/usr/bin/env node
// `npm run dev`: a complete local Spool (Postgres, Redis, API, worker, scheduler) with persistent data.
//
//  1. Starts Postgres + Redis with scripts/services.mjs in persistent mode under SPOOL_DATA_DIR (default
//     <repo>/.data), unless DATABASE_URL / REDIS_URL are set.
//  2. Applies migrations.
//  3. Builds the dashboard when its sources changed (the API serves it at /).
//     Starts the API, waits for /api/v1/health, then makes sure a "default" project and a project API key
//     exist (reused from <data dir>/dev.json across runs), then starts the worker and the scheduler.
//     dev.json's `ready` is true from the worker's registration (the banner) until dev stops.
//  4. Once up, an app that dies is restarted (backoff 1 s doubling to 30 s); the others keep running.
//  5. Ctrl-C / SIGTERM stops everything in order: apps first (SIGTERM, SIGKILL after 10 s), then services.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import net from "node:net";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { deployMigrations } from "../packages/db/scripts/migrate.mjs";
import { ensureDashboardBuilt } from "./build-dashboard.mjs";
import { startServicesProcess } from "./services-client.mjs";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dataDir = resolve(process.env.SPOOL_DATA_DIR || join(repoRoot, ".data"));
const devJsonPath = join(dataDir, "dev.json");
const port = Number(process.env.PORT || 8080);
const apiUrl = `http://127.0.0.1:${port}`;
const HEALTH_TIMEOUT_MS = 60_000;
const CHILD_STOP_TIMEOUT_MS = 10_000;

const APPS = {
  api: "apps/api/src/main.ts",
  worker: "apps/worker/src/main.ts",
  scheduler: "apps/scheduler/src/main.ts",
};

const log = (message) => process.stderr.write(`[dev] ${message}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class DevError extends Error {}

// ---------------------------------------------------------------------------------------------------------
// State shared with the shutdown path

/** @type {Map<string, import("node:child_process").ChildProcess>} */
const children = new Map();
/** @type {Promise<import("./services-client.d.mts").ServicesHandle> | undefined} */
let servicesStarting;
let shuttingDown = false;
let shutdownPromise;

function alive(child) {
  return child.exitCode === null && child.signalCode === null;
}

function waitForExit(child) {
  if (!alive(child)) return Promise.resolve();
  return new Promise((r) => child.once("exit", () => r()));
}

async function stopChild(name, child) {
  if (!alive(child)) return;
  const exited = waitForExit(child);
  child.kill("SIGTERM");
  const timer = setTimeout(() => {
    if (alive(child)) {
      log(`${name} did not exit within ${CHILD_STOP_TIMEOUT_MS / 1000} s; killing it`);
      child.kill("SIGKILL");
    }
  }, CHILD_STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function shutdown(code, reason) {
  if (shutdownPromise) return shutdownPromise;
  shuttingDown = true;
  if (reason) log(reason);
  shutdownPromise = (async () => {
    // A script that reads dev.json must not take a stopping instance for a running one.
    if (readyWritten) markReady(false);
    // Apps first (they need the services to drain), then the services.
    await Promise.allSettled([...children].map(([name, child]) => stopChild(name, child)));
    if (servicesStarting) {
      const services = await servicesStarting.catch(() => undefined);
      if (services) {
        log("stopping postgres and redis");
        await services.stop();
      }
    }
    log(code === 0 ? "stopped" : `stopped (exit code ${code})`);
    process.exit(code);
  })();
  return shutdownPromise;
}

// Whoever started dev may die without a signal reaching it (a wrapper shell that does not forward
// one): an orphan must not keep Postgres, Redis and the apps running with nobody to stop them.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid && !shuttingDown)
    shutdown(0, "the process that started dev is gone; shutting down");
}, 1000).unref();

let signalCount = 0;
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => {
    signalCount++;
    if (signalCount === 1) {
      shutdown(0, `received ${sig}; shutting down (press Ctrl-C again to force)`);
    } else {
      log("forcing: killing apps");
      for (const child of children.values()) if (alive(child)) child.kill("SIGKILL");
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// Helpers

function readDevJson() {
  if (!existsSync(devJsonPath)) return {};
  try {
    const parsed = JSON.parse(readFileSync(devJsonPath, "utf8"));
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch (err) {
    log(`ignoring unreadable ${devJsonPath}: ${err instanceof Error ? err.message : err}`);
    return {};
  }
}

// Whether dev.json says ready: true now (only then does shutting down need to say otherwise).
let readyWritten = false;

/** Sets dev.json's `ready`: true once the worker has registered, false while starting or stopping. */
function markReady(ready) {
  try {
    writeDevJson({ ...readDevJson(), ready });
    readyWritten = ready;
  } catch (err) {
    log(`could not update ${devJsonPath}: ${err instanceof Error ? err.message : err}`);
  }
}

function writeDevJson(content) {
  const tmp = `${devJsonPath}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, devJsonPath);
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` uniformly random base62 characters. */
function randomBase62(length) {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62]; // 248 = 4 * 62: no modulo bias
    }
  }
  return out;
}

function isPortFree(p) {
  return new Promise((r) => {
    const srv = net.createServer();
    srv.once("error", () => r(false));
    srv.listen({ port: p, exclusive: true }, () => srv.close(() => r(true)));
  });
}

/** Once everything is up, an app that dies is started again (after a backoff) instead of stopping dev. */
let supervising = false;
const RESTART_BACKOFF_MS = { initial: 1_000, max: 30_000, stableAfter: 60_000 };
/** @type {Map<string, { failures: number }>} */
const restarts = new Map();

function startApp(name, env) {
  const entry = APPS[name];
  if (!existsSync(join(repoRoot, entry))) throw new DevError(`${entry} does not exist`);
  const startedAt = Date.now();
  const child = spawn(process.execPath, ["--import", "tsx", entry], { cwd: repoRoot, env, stdio: "inherit" });
  children.set(name, child);
  child.once("error", (err) => {
    if (!shuttingDown && !supervising) shutdown(1, `${name} could not be started: ${err.message}`);
  });
  child.once("exit", (code, signal) => {
    if (shuttingDown) return;
    if (!supervising) {
      shutdown(1, `${name} exited unexpectedly (code ${code}, signal ${signal}); shutting everything down`);
      return;
    }
    // The others keep running; this one comes back, sooner if it had been up a while.
    const record = restarts.get(name) ?? { failures: 0 };
    if (Date.now() - startedAt >= RESTART_BACKOFF_MS.stableAfter) record.failures = 0;
    const delay = Math.min(RESTART_BACKOFF_MS.max, RESTART_BACKOFF_MS.initial * 2 ** record.failures);
    record.failures++;
    restarts.set(name, record);
    log(`${name} exited unexpectedly (code ${code}, signal ${signal}); restarting it in ${delay / 1000} s`);
    setTimeout(() => {
      if (shuttingDown) return;
      log(`restarting ${name}`);
      startApp(name, env);
    }, delay).unref();
  });
  return child;
}

async function waitForHealth(api) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  let last = "no response";
  while (Date.now() < deadline) {
    if (!alive(api)) throw new DevError(`the API exited before it became healthy (code ${api.exitCode})`);
    try {
      const res = await fetch(`${apiUrl}/api/v1/health`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last =
        err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    }
    await sleep(250);
  }
  throw new DevError(
    `GET ${apiUrl}/api/v1/health did not return 200 within ${HEALTH_TIMEOUT_MS / 1000} s (${last})`,
  );
}

async function api(method, path, { bearer, projectId, body } = {}) {
  const headers = { accept: "application/json" };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (projectId) headers["x-project-id"] = projectId;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/**
 * Waits until the worker just started has registered (and with it the workflows it serves), so the
 * banner only appears once a run started from it can be accepted. A worker row left "online" by an
 * earlier start does not count: only one registered since `since`.
 */
async function waitForWorker(worker, { projectId, apiKey, since }) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (!alive(worker))
      throw new DevError(`the worker exited before it registered (code ${worker.exitCode})`);
    const { status, json } = await api("GET", "/api/v1/workers?status=online", { bearer: apiKey, projectId });
    if (status === 200 && json?.workers?.some((w) => Date.parse(w.registered_at) >= since)) return;
    await sleep(250);
  }
  throw new DevError(`the worker did not register within ${HEALTH_TIMEOUT_MS / 1000} s`);
}

/** Reuses dev.json's project and key when the API accepts them; otherwise creates both. */
async function ensureProject(saved, adminKey) {
  if (typeof saved.project_id === "string" && typeof saved.api_key === "string") {
    const res = await api("GET", `/api/v1/projects/${encodeURIComponent(saved.project_id)}`, {
      bearer: saved.api_key,
      projectId: saved.project_id,
    });
    if (res.status === 200) return { projectId: saved.project_id, apiKey: saved.api_key, created: false };
    if (![401, 403, 404].includes(res.status)) {
      throw new DevError(`checking the saved project failed: HTTP ${res.status} ${res.text.slice(0, 500)}`);
    }
    log(`the saved project ${saved.project_id} is not usable (HTTP ${res.status}); creating a new one`);
  }
  const project = await api("POST", "/api/v1/projects", { bearer: adminKey, body: { name: "default" } });
  if (project.status !== 201 || typeof project.json?.id !== "string") {
    throw new DevError(`POST /api/v1/projects failed: HTTP ${project.status} ${project.text.slice(0, 500)}`);
  }
  const projectId = project.json.id;
  const key = await api("POST", `/api/v1/projects/${encodeURIComponent(projectId)}/api-keys`, {
    bearer: adminKey,
    body: { name: "dev" },
  });
  if (key.status !== 201 || typeof key.json?.key !== "string") {
    throw new DevError(
      `POST /api/v1/projects/${projectId}/api-keys failed: HTTP ${key.status} ${key.text.slice(0, 500)}`,
    );
  }
  return { projectId, apiKey: key.json.key, created: true };
}

function redactUrl(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}

function banner({ projectId, apiKey, adminKey, databaseUrl, redisUrl }) {
  const rel = relative(process.cwd(), devJsonPath);
  const shown = rel && !rel.startsWith("..") ? rel : devJsonPath;
  const rows = [
    ["API", apiUrl],
    ["Dashboard", `${apiUrl}/  (sign in with the project key below)`],
    ["API docs", `${apiUrl}/api/v1/docs`],
    ["Project ID", projectId],
    ["Project key", apiKey],
    ["Admin key", adminKey],
    ["Postgres", redactUrl(databaseUrl)],
    ["Redis", redisUrl],
    ["Data dir", `${dataDir}  (these values are saved in ${shown})`],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const line = "─".repeat(78);
  const out = [
    "",
    line,
    "  Spool is running",
    "",
    ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`),
    "",
    "  Try:",
    `    curl ${apiUrl}/api/v1/health`,
    `    curl -H "Authorization: Bearer ${apiKey}" -H "X-Project-ID: ${projectId}" \\`,
    `         ${apiUrl}/api/v1/projects/${projectId}`,
    "",
    servicesStarting
      ? "  Ctrl-C stops the API, worker, scheduler, Postgres and Redis (data is kept)."
      : "  Ctrl-C stops the API, worker and scheduler (DATABASE_URL / REDIS_URL came from the environment).",
    line,
    "",
  ];
  process.stdout.write(out.join("\n"));
}

// ---------------------------------------------------------------------------------------------------------

async function main() {
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new DevError(`PORT must be a port number`);
  if (!(await isPortFree(port))) {
    throw new DevError(
      `port ${port} is already in use; stop whatever uses it or run with PORT=<another port>`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const saved = readDevJson();

  // 1. Services
  let databaseUrl = process.env.DATABASE_URL;
  let redisUrl = process.env.REDIS_URL;
  if (!databaseUrl || !redisUrl) {
    log(`starting postgres and redis (data in ${dataDir})`);
    servicesStarting = startServicesProcess({
      persistent: true,
      dataDir,
      // Own process group: a terminal's Ctrl-C must not stop the databases before the apps have drained.
      detached: true,
      onStderr: (chunk) => process.stderr.write(chunk),
    });
    const services = await servicesStarting;
    if (shuttingDown) return;
    services.exited.then(() => {
      if (!shuttingDown) shutdown(1, "the services process (postgres/redis) exited unexpectedly");
    });
    databaseUrl = services.databaseUrl;
    redisUrl = services.redisUrl;
  }

  // 2. Migrations
  const applied = await deployMigrations(databaseUrl, { log: (m) => log(`migrations: ${m}`) });
  log(applied.length ? `applied ${applied.length} migration(s)` : "database schema is up to date");
  if (shuttingDown) return;

  // 3. Admin key (saved right away: the API may remember it)
  const adminKey =
    process.env.SPOOL_ADMIN_KEY ||
    (typeof saved.admin_key === "string" && saved.admin_key) ||
    `sk_admin_${randomBase62(40)}`;
  writeDevJson({
    ...saved,
    api_url: apiUrl,
    admin_key: adminKey,
    database_url: databaseUrl,
    redis_url: redisUrl,
    ready: false,
  });

  // 4. Dashboard (served by the API at /), built when its sources changed
  ensureDashboardBuilt({ log });

  // 5. API
  const baseEnv = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PORT: String(port) };
  baseEnv.SPOOL_ADMIN_KEY = adminKey;
  log(`starting the API on ${apiUrl}`);
  const apiChild = startApp("api", baseEnv);
  await waitForHealth(apiChild);
  if (shuttingDown) return;

  // 6. Default project and key
  const { projectId, apiKey, created } = await ensureProject(saved, adminKey);
  log(created ? `created project "default" (${projectId}) and a "dev" key` : `reusing project ${projectId}`);
  writeDevJson({
    api_url: apiUrl,
    project_id: projectId,
    api_key: apiKey,
    admin_key: adminKey,
    // To look inside with psql or redis-cli.
    database_url: databaseUrl,
    redis_url: redisUrl,
    ready: false,
  });
  if (shuttingDown) return;

  // 7. Worker and scheduler
  const appEnv = { ...baseEnv, SPOOL_API_URL: apiUrl, SPOOL_API_KEY: apiKey, SPOOL_PROJECT_ID: projectId };
  const workerStartedAt = Date.now();
  const worker = startApp("worker", appEnv);
  startApp("scheduler", appEnv);
  await waitForWorker(worker, { projectId, apiKey, since: workerStartedAt });
  if (shuttingDown) return;

  supervising = true;
  // After the worker's registration: a script that waits for `ready` finds the examples served.
  markReady(true);
  banner({ projectId, apiKey, adminKey, databaseUrl, redisUrl });
}

main().catch((err) => {
  if (shuttingDown) return;
  const message = err instanceof DevError ? err.message : err instanceof Error ? err.stack : String(err);
  shutdown(1, `error: ${message}`);
});
