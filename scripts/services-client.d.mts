import type { ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";

export interface StartServicesOptions {
  /** Persistent mode: where `postgres/` and `redis/` live. Otherwise the parent of the temporary dir. */
  dataDir?: string;
  /** Keep data in `dataDir` across runs (AOF for Redis). Default: a fresh temporary dir, removed at stop. */
  persistent?: boolean;
  /** A temporary Postgres that fsyncs every commit like production (persistent mode always does). */
  durable?: boolean;
  /** Extra environment for services.mjs. A set DATABASE_URL / REDIS_URL is passed through, not started. */
  env?: NodeJS.ProcessEnv;
  /** Preferred ports (falls back to a free port when taken). */
  pgPort?: number;
  redisPort?: number;
  /** Receives services.mjs's stderr (logs) as it arrives. By default it is only kept for error messages. */
  onStderr?: (chunk: string) => void;
  /** Run in its own process group, so a terminal's Ctrl-C does not reach Postgres/Redis directly. */
  detached?: boolean;
  /** How long to wait for READY. Default 60 s. */
  timeoutMs?: number;
}

export interface ServicesHandle {
  databaseUrl: string;
  redisUrl: string;
  /** Closes the child's stdin and waits for it to exit (SIGKILL after 15 s). Idempotent. */
  stop(): Promise<void>;
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  /** Resolves when the child has exited. */
  exited: Promise<void>;
}

export declare const servicesScript: string;

export declare function startServicesProcess(options?: StartServicesOptions): Promise<ServicesHandle>;

/** SIGQUITs the postmaster of a persistent `dataDir` (immediate shutdown, crash recovery on restart); its pid. */
export declare function crashPostgres(dataDir: string): number;
