// `npm run dev` keeps the rest running when one app dies, and starts that app again; stopped with
// SIGTERM (as a process manager stops it), it leaves nothing running.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, freePort } from "./harness.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("npm run dev", () => {
  let dev: ChildProcess | undefined;
  const dataDir = mkdtempSync(join(tmpdir(), "spool-dev-test-"));
  afterAll(async () => {
    if (dev && dev.exitCode === null) {
      const exited = new Promise((r) => dev?.once("exit", r));
      dev.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("restarts a worker that was killed, and the others keep serving", async () => {
    const port = await freePort();
    let output = "";
    dev = spawn(process.execPath, ["scripts/dev.mjs"], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: inject("databaseUrl"),
        REDIS_URL: inject("redisUrl"),
        PORT: String(port),
        SPOOL_DATA_DIR: dataDir,
        SPOOL_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    dev.stdout?.on("data", (d: Buffer) => {
      output += d;
    });
    dev.stderr?.on("data", (d: Buffer) => {
      output += d;
    });
    await eventually(
      async () => (output.includes("Spool is running") ? true : undefined),
      90_000,
      "the banner",
    );
    const saved = JSON.parse(readFileSync(join(dataDir, "dev.json"), "utf8")) as {
      api_url: string;
      api_key: string;
      project_id: string;
    };
    const headers = { authorization: `Bearer ${saved.api_key}`, "x-project-id": saved.project_id };
    const online = async () =>
      (
        (await (await fetch(`${saved.api_url}/api/v1/workers?status=online`, { headers })).json()) as {
          workers: { id: string; registered_at: string }[];
        }
      ).workers;

    const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(dev.pid)], {
      encoding: "utf8",
    });
    const workerPid = Number(
      children
        .split("\n")
        .find((l) => l.includes("apps/worker/src/main.ts"))
        ?.trim()
        .split(/\s+/)[0],
    );
    expect(workerPid).toBeGreaterThan(0);
    const killedAt = Date.now();
    process.kill(workerPid, "SIGKILL");

    await eventually(
      async () => (output.includes("restarting worker") ? true : undefined),
      30_000,
      "the restart",
    );
    await eventually(
      async () =>
        (await online()).some((w) => Date.parse(w.registered_at) >= killedAt - 1000) ? true : undefined,
      60_000,
      "the restarted worker's registration",
    );
    // dev itself and the API kept running throughout.
    expect(dev.exitCode).toBeNull();
    expect((await fetch(`${saved.api_url}/api/v1/health`)).status).toBe(200);
  });

  it("SIGTERM to npm run dev stops the apps, Postgres and Redis it started", async () => {
    const own = mkdtempSync(join(tmpdir(), "spool-dev-term-"));
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !["DATABASE_URL", "REDIS_URL"].includes(k)),
    );
    const npm = spawn("npm", ["run", "dev"], {
      cwd: ROOT,
      env: { ...env, PORT: String(await freePort()), SPOOL_DATA_DIR: own, SPOOL_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    npm.stdout?.on("data", (d: Buffer) => {
      output += d;
    });
    npm.stderr?.on("data", (d: Buffer) => {
      output += d;
    });
    let started: number[] = [];
    try {
      await eventually(
        async () => (output.includes("Spool is running") ? true : undefined),
        120_000,
        "the banner",
      );
      started = descendantsOf(npm.pid as number);
      // npm, dev, its services process, redis-server, postgres, and the three apps at least.
      expect(started.length).toBeGreaterThanOrEqual(7);
      npm.kill("SIGTERM");
      await eventually(
        async () => (started.every((pid) => !isAlive(pid)) ? true : undefined),
        60_000,
        `every process dev started to exit:\n${output.slice(-2000)}`,
      );
    } finally {
      // What is still running (the test failed): orphans included, they are no longer below npm.
      for (const pid of new Set([...started, ...descendantsOf(npm.pid as number)])) {
        if (isAlive(pid)) process.kill(pid, "SIGKILL");
      }
      rmSync(own, { recursive: true, force: true });
    }
  }, 200_000);
});

/** Every process below `pid` (children, their children, ...). */
function descendantsOf(pid: number): number[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows) {
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
