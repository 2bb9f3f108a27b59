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
 * and a few connections more, opened only by a process that writes through them (AsyncCommits).
 */
export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
  asyncCommits: AsyncCommits;
}

export function createDatabase({ databaseUrl, maxConnections = 10 }: CreateDatabaseOptions): Database {
  const pool = quietPool(new pg.Pool({ connectionString: databaseUrl, max: maxConnections }));
  return {
    prisma: new PrismaClient({ adapter: new PrismaPg(pool) }),
    pool,
    asyncCommits: new AsyncCommits(databaseUrl, Math.max(2, Math.ceil(maxConnections / 4)), pool),
  };
}

/** What raw SQL needs of a pool: one statement, one round trip. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/**
 * Statements whose commit does not wait for the disk (`synchronous_commit = off`): it returns once
 * it is in Postgres' WAL buffers, visible to every session at once, and reaches the disk with the
 * next synchronous commit of anyone (which flushes the WAL up to itself, every earlier commit with
 * it) or within 3 × wal_writer_delay (600 ms by default). A Postgres crash can lose one only while
 * nothing has committed after it synchronously, so it is only for a write nobody has been told of
 * and nothing has acted on yet (the engine's one use: Executions.runAndWait). Nothing a client is
 * told may rest on one alone.
 *
 * Its connections (opened on first use) carry the setting in the `options` startup parameter. A
 * `DATABASE_URL` with `options` of its own replaces it, and a pooler may refuse it (PgBouncer does
 * unless told to ignore it): then the statements run on the main pool and commit synchronously,
 * which is only slower. Refused means: this pool could not connect where the main pool could.
 */
export class AsyncCommits implements Queryable {
  private readonly own: pg.Pool;
  private refused = false;

  constructor(
    databaseUrl: string,
    max: number,
    private readonly fallback: pg.Pool,
  ) {
    this.own = quietPool(
      new pg.Pool({ connectionString: databaseUrl, max, options: "-c synchronous_commit=off" }),
    );
  }

  async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    if (this.refused) return this.fallback.query<R>(config);
    let client: pg.PoolClient;
    try {
      client = await this.own.connect();
    } catch {
      // Nothing was sent: the statement may run elsewhere. When the main pool can run it, this
      // pool's connections are refused for a reason of their own, for good.
      const result = await this.fallback.query<R>(config);
      this.refused = true;
      return result;
    }
    try {
      const result = await client.query<R>(config);
      client.release();
      return result;
    } catch (err) {
      // A broken connection is dropped, not handed out again.
      client.release(err as Error);
      throw err;
    }
  }

  /** Whether its statements run on the main pool instead (see above). */
  get synchronous(): boolean {
    return this.refused;
  }

  end(): Promise<void> {
    return this.own.end();
  }
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
