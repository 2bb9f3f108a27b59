// `npm run dev` keeps the rest running when one app dies, and starts that app again.
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
});
