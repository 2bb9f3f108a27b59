// `npm run dev` keeps the rest running when one app dies, and starts that app again; stopped with
// SIGTERM (as a process manager stops it), it leaves nothing running.
import { execFileSync } from "node:child_process";
import { afterAll, describe, expect, inject, it } from "vitest";
import { type DevProcess, startDev } from "./dev-process.js";
import { eventually } from "./harness.js";

describe("npm run dev", () => {
  const started: DevProcess[] = [];
  afterAll(async () => {
    await Promise.all(started.map((d) => d.stop()));
  });

  it("restarts a worker that was killed, and the others keep serving", async () => {
    const dev = await startDev({
      services: { databaseUrl: inject("databaseUrl"), redisUrl: inject("redisUrl") },
    });
    started.push(dev);
    const saved = dev.devJson();
    // Written after the worker registered, so a script waiting for it finds the examples served.
    expect(saved.ready).toBe(true);
    const headers = { authorization: `Bearer ${saved.api_key}`, "x-project-id": saved.project_id };
    const online = async () =>
      (
        (await (await fetch(`${saved.api_url}/api/v1/workers?status=online`, { headers })).json()) as {
          workers: { id: string; registered_at: string }[];
        }
      ).workers;

    const children = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(dev.child.pid)], {
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
      async () => (dev.output().includes("restarting worker") ? true : undefined),
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
    expect(dev.child.exitCode).toBeNull();
    expect((await fetch(`${saved.api_url}/api/v1/health`)).status).toBe(200);
  });

  it("SIGTERM to npm run dev stops the apps, Postgres and Redis it started", async () => {
    const dev = await startDev({ services: "own", viaNpm: true });
    started.push(dev);
    const npmPid = dev.child.pid as number;
    let processes: number[] = [];
    try {
      processes = descendantsOf(npmPid);
      // npm, dev, its services process, redis-server, postgres, and the three apps at least.
      expect(processes.length).toBeGreaterThanOrEqual(7);
      dev.child.kill("SIGTERM");
      await eventually(
        async () => (processes.every((pid) => !isAlive(pid)) ? true : undefined),
        60_000,
        `every process dev started to exit:\n${dev.output().slice(-2000)}`,
      );
      // A script reading dev.json now does not take the stopped instance for a running one.
      expect(dev.devJson().ready).toBe(false);
    } finally {
      // What is still running (the test failed): orphans included, they are no longer below npm.
      for (const pid of new Set([...processes, ...descendantsOf(npmPid)])) {
        if (isAlive(pid)) process.kill(pid, "SIGKILL");
      }
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
