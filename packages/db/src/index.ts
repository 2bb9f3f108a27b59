import { PrismaPg } from "@prisma/adapter-pg";
import type pg from "pg";
import { Prisma, PrismaClient } from "./generated/prisma/client.js";
import { GroupCommitPool } from "./group-commit.js";

export * from "./generated/prisma/client.js";
export { type LockTimeout, type NamedStatement, queryTogether, queryTogetherAlone } from "./group-commit.js";
export type { pg };

export interface CreateDatabaseOptions {
  databaseUrl: string;
  /** Pool size per process; the default suits one api/worker/scheduler replica. */
  maxConnections?: number;
}

/**
 * One process's database access: one `pg` pool, shared by Prisma (schema-typed queries on the cold
 * paths) and the hot path's raw SQL (engine/src/sql), so a process holds one set of connections. The
 * hot path's named statements go through group commit (group-commit.ts).
 */
export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
}

export function createDatabase({ databaseUrl, maxConnections = 10 }: CreateDatabaseOptions): Database {
  const pool = new GroupCommitPool({ connectionString: databaseUrl, max: maxConnections });
  // An idle client losing its connection (Postgres restarted) must not crash the process; the pool
  // drops it and the next query opens a new one.
  pool.on("error", () => {});
  // Nor one checked out (an interactive transaction between its statements): it emits 'error' with
  // nobody else listening, which would throw. Its holder's next statement fails instead, and the
  // pool drops it when it comes back.
  pool.on("connect", (client) => client.on("error", () => {}));
  return { prisma: new PrismaClient({ adapter: new PrismaPg(pool) }), pool };
}

/** The client or an interactive-transaction client: engine functions accept either. */
export type Db = PrismaClient | Prisma.TransactionClient;

/** A JSON value Prisma accepts for a Json column; `undefined` leaves the column unchanged. */
export type JsonInput = Prisma.InputJsonValue;
/** Writes SQL NULL into a nullable Json column when the value is null/undefined. */
export const jsonOrNull = (value: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull =>
  value === null || value === undefined ? Prisma.DbNull : (value as Prisma.InputJsonValue);
