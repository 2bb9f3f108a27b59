import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { Prisma, PrismaClient } from "./generated/prisma/client.js";

export * from "./generated/prisma/client.js";
export type { pg };

export interface CreateDatabaseOptions {
  databaseUrl: string;
  /** Pool size per process; the default suits one api/worker/scheduler replica. */
  maxConnections?: number;
}

/**
 * One process's database access: one `pg` pool, shared by Prisma (schema-typed queries on the cold
 * paths) and the hot path's raw SQL (engine/src/sql), so a process holds one set of connections;
 * and a few connections more, opened only by a process that writes through them (see
 * createAsyncCommitPool).
 */
export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
  /** A few more connections, whose commits do not wait for the disk: see createAsyncCommitPool. */
  asyncCommitPool: pg.Pool;
}

export function createDatabase({ databaseUrl, maxConnections = 10 }: CreateDatabaseOptions): Database {
  const pool = quietPool(new pg.Pool({ connectionString: databaseUrl, max: maxConnections }));
  return {
    prisma: new PrismaClient({ adapter: new PrismaPg(pool) }),
    pool,
    asyncCommitPool: createAsyncCommitPool(databaseUrl, Math.max(2, Math.ceil(maxConnections / 4))),
  };
}

/**
 * Connections with `synchronous_commit = off`: a commit returns once it is in Postgres' WAL buffers,
 * visible to every session at once, and reaches the disk within 3 × wal_writer_delay (600 ms by
 * default) or with the next synchronous commit, whichever is first: a synchronous commit flushes the
 * WAL up to itself, every earlier commit with it. So a Postgres crash can lose such a commit only
 * while nothing committed after it synchronously. That is for a write whose loss looks like what the
 * engine already recovers from (a worker's start: as if the worker died before its first write), or
 * that nobody has been told of yet (the insert of a run whose client waits for it to end: its end is
 * a synchronous commit). Nothing a client is told may rest on one alone. Connections open on first
 * use only.
 */
function createAsyncCommitPool(databaseUrl: string, max: number): pg.Pool {
  return quietPool(new pg.Pool({ connectionString: databaseUrl, max, options: "-c synchronous_commit=off" }));
}

function quietPool(pool: pg.Pool): pg.Pool {
  // An idle client losing its connection (Postgres restarted) must not crash the process; the pool
  // drops it and the next query opens a new one.
  pool.on("error", () => {});
  // Nor one checked out (an interactive transaction between its statements): it emits 'error' with
  // nobody else listening, which would throw. Its holder's next statement fails instead, and the
  // pool drops it when it comes back.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

/** The client or an interactive-transaction client: engine functions accept either. */
export type Db = PrismaClient | Prisma.TransactionClient;

/** A JSON value Prisma accepts for a Json column; `undefined` leaves the column unchanged. */
export type JsonInput = Prisma.InputJsonValue;
/** Writes SQL NULL into a nullable Json column when the value is null/undefined. */
export const jsonOrNull = (value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull =>
  value === null || value === undefined ? Prisma.DbNull : (value as Prisma.InputJsonValue);
