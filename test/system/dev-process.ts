// `npm run dev` (or scripts/dev.mjs) as a test starts it: its own data directory and port, its
// output kept, the banner awaited, and stopped with SIGTERM as a person's Ctrl-C or a process manager.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { eventually, freePort } from "./harness.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** What dev writes to `<data dir>/dev.json`. */
export interface DevJson {
  api_url: string;
  api_key: string;
  project_id: string;
  admin_key: string;
  database_url: string;
  redis_url: string;
  /** True once the worker has registered (the banner); false while dev starts or stops. */
  ready: boolean;
}

export interface DevProcess {
  child: ChildProcess;
  dataDir: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  devJson(): DevJson;
  /** SIGTERM, and waits for it to exit; then removes its data directory. */
  stop(): Promise<void>;
}

/**
 * Starts dev and waits for its banner. `services`: given URLs (the test setup's Postgres and
 * Redis), or "own": dev starts its own, as on a fresh machine. `viaNpm`: through `npm run dev`, as
 * the README says, rather than `node scripts/dev.mjs`.
 */
export async function startDev(o: {
  services: { databaseUrl: string; redisUrl: string } | "own";
  viaNpm?: boolean;
}): Promise<DevProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "spool-dev-"));
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !["DATABASE_URL", "REDIS_URL"].includes(k)),
  );
  const env = {
    ...inherited,
    ...(o.services === "own" ? {} : { DATABASE_URL: o.services.databaseUrl, REDIS_URL: o.services.redisUrl }),
    PORT: String(await freePort()),
    SPOOL_DATA_DIR: dataDir,
    SPOOL_LOG_LEVEL: "warn",
  };
  const child = o.viaNpm
    ? spawn("npm", ["run", "dev"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(process.execPath, ["scripts/dev.mjs"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d;
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d;
  });
  const dev: DevProcess = {
    child,
    dataDir,
    output: () => output,
    devJson: () => JSON.parse(readFileSync(join(dataDir, "dev.json"), "utf8")) as DevJson,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await eventually(
      async () => (output.includes("Spool is running") ? true : undefined),
      120_000,
      "the banner",
    );
  } catch (err) {
    await dev.stop();
    throw new Error(`${(err as Error).message}\n${output.slice(-3000)}`);
  }
  return dev;
}
