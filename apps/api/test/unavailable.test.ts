// isDependencyUnavailable against errors the real drivers raise: pg, Prisma over @prisma/adapter-pg,
// ioredis and the engine's dispatcher, each made to fail for real (closed ports, a server that hangs
// up or never answers, an exhausted pool, a terminated backend, a role over its connection limit).
// Genuine bugs from the same drivers must not be mistaken for an outage.
import { randomUUID } from "node:crypto";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "@spool/db";
import { Dispatcher, isDependencyUnavailable } from "@spool/engine";
import { notFound } from "@spool/shared";
import { Redis, type RedisOptions } from "ioredis";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from "vitest";

/** The rejection of `run` (fails the test if it resolves). */
async function caught(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

function database(url: string, config: pg.PoolConfig = {}) {
  const pool = new pg.Pool({ connectionString: url, ...config });
  pool.on("error", () => {});
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  onTestFinished(async () => {
    await prisma.$disconnect();
    await pool.end();
  });
  return { pool, prisma };
}

/** A local TCP server that does `onConnection` with every client; closed after the file. */
const servers: Server[] = [];
const sockets = new Set<Socket>();
async function tcpServer(onConnection: (socket: Socket) => void): Promise<string> {
  const server = createServer((socket) => {
    sockets.add(socket);
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterAll(() => {
  for (const socket of sockets) socket.destroy();
  for (const server of servers) server.close();
});

/** A port nothing listens on: taken from the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("isDependencyUnavailable: Postgres", () => {
  let refusedUrl: string;
  beforeAll(async () => {
    refusedUrl = `postgresql://postgres@127.0.0.1:${await closedPort()}/spool`;
  });

  it("recognises a refused connection from pg and from Prisma (model, raw and transaction paths)", async () => {
    const { pool, prisma } = database(refusedUrl);
    const raw = await caught(() => pool.query("select 1"));
    expect(raw).toMatchObject({ code: "ECONNREFUSED" });
    const model = await caught(() => prisma.project.count());
    expect(model).toMatchObject({ name: "PrismaClientKnownRequestError", code: "P1001" });
    const rawQuery = await caught(() => prisma.$queryRaw`select 1`);
    // Raw queries wrap the adapter error as P2010; the reason sits in meta.driverAdapterError.
    expect(rawQuery).toMatchObject({ code: "P2010" });
    const tx = await caught(() => prisma.$transaction((t) => t.project.count()));
    for (const err of [raw, model, rawQuery, tx]) expect(isDependencyUnavailable(err)).toBe(true);
  });

  it("recognises a server that hangs up, one that never answers, and an exhausted pool", async () => {
    const hangsUp = database(`postgresql://postgres@${await tcpServer((s) => s.destroy())}/spool`);
    const droppedPg = await caught(() => hangsUp.pool.query("select 1"));
    const droppedPrisma = await caught(() => hangsUp.prisma.project.count());
    expect(droppedPg).toMatchObject({ message: "Connection terminated unexpectedly" });

    const silent = database(`postgresql://postgres@${await tcpServer(() => {})}/spool`, {
      connectionTimeoutMillis: 200,
    });
    const connectTimeout = await caught(() => silent.prisma.project.count());
    expect(connectTimeout).toMatchObject({ message: "Connection terminated due to connection timeout" });

    const busy = database(inject("databaseUrl"), { max: 1, connectionTimeoutMillis: 200 });
    // Taking the one connection may itself time out on a loaded machine: try until it is held.
    const held = await eventuallyConnected(busy.pool);
    onTestFinished(() => held.release());
    const poolTimeout = await caught(() => busy.pool.query("select 1"));
    expect(poolTimeout).toMatchObject({ message: "timeout exceeded when trying to connect" });

    const waiting = database(inject("databaseUrl"), { max: 1 });
    const heldToo = await waiting.pool.connect();
    onTestFinished(() => heldToo.release());
    const txWait = await caught(() =>
      waiting.prisma.$transaction((t) => t.project.count(), { maxWait: 200 }),
    );
    expect(txWait).toMatchObject({ code: "P2028" });

    for (const err of [droppedPg, droppedPrisma, connectTimeout, poolTimeout, txWait]) {
      expect(isDependencyUnavailable(err)).toBe(true);
    }
  });

  it("recognises a backend terminated by the server (57P01) through pg and through Prisma", async () => {
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    onTestFinished(() => admin.end());
    const { pool, prisma } = database(inject("databaseUrl"));
    const terminate = async (marker: string) => {
      // Waits for the query to be running (a condition, not a delay), then ends its backend.
      for (;;) {
        const { rowCount } = await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()",
          [`%${marker}%`],
        );
        if (rowCount) return;
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const [viaPg] = await Promise.all([
      caught(() => pool.query("SELECT pg_sleep(30) /* terminate-me-pg */")),
      terminate("terminate-me-pg"),
    ]);
    expect(viaPg).toMatchObject({ code: "57P01" });
    const [viaPrisma] = await Promise.all([
      caught(() => prisma.$queryRawUnsafe("SELECT pg_sleep(30) /* terminate-me-prisma */")),
      terminate("terminate-me-prisma"),
    ]);
    expect(viaPrisma).toMatchObject({ code: "P2010" });
    expect(isDependencyUnavailable(viaPg)).toBe(true);
    expect(isDependencyUnavailable(viaPrisma)).toBe(true);
  });

  it("recognises too many connections (53300) through pg and Prisma", async () => {
    const role = `spool_limit_${randomUUID().slice(0, 8)}`;
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    const password = randomUUID();
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' CONNECTION LIMIT 0`);
    onTestFinished(async () => {
      await admin.query(`DROP ROLE ${role}`);
      await admin.end();
    });
    const url = new URL(inject("databaseUrl"));
    url.username = role;
    url.password = password;
    const { pool, prisma } = database(url.toString());
    const viaPg = await caught(() => pool.query("select 1"));
    expect(viaPg).toMatchObject({ code: "53300" });
    const viaPrisma = await caught(() => prisma.project.count());
    expect(viaPrisma).toMatchObject({ code: "P2037" });
    expect(isDependencyUnavailable(viaPg)).toBe(true);
    expect(isDependencyUnavailable(viaPrisma)).toBe(true);
  });

  it("looks through a wrapper's cause", async () => {
    const { pool } = database(refusedUrl);
    const refused = await caught(() => pool.query("select 1"));
    expect(isDependencyUnavailable(new Error("loading the run failed", { cause: refused }))).toBe(true);
  });
});

describe("isDependencyUnavailable: Redis", () => {
  let deadUrl: string;
  beforeAll(async () => {
    deadUrl = `redis://127.0.0.1:${await closedPort()}`;
  });
  const client = (url: string, options: RedisOptions) => {
    const redis = new Redis(url, options);
    const events: Error[] = [];
    redis.on("error", (err: Error) => events.push(err));
    onTestFinished(() => redis.disconnect());
    return { redis, events };
  };

  it("recognises each client setup of the apps failing against a dead Redis", async () => {
    // The test harness's client: no retries, so the connection ends.
    const ended = client(deadUrl, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    const closed = await caught(() => ended.redis.ping());
    expect(closed).toMatchObject({ message: "Connection is closed." });
    expect(ended.events[0]).toMatchObject({ code: "ECONNREFUSED" });
    // apps/api/src/main.ts: reconnects, a command gives up after one retry.
    const retrying = client(deadUrl, { maxRetriesPerRequest: 1 });
    const maxRetries = await caught(() => retrying.redis.ping());
    expect(maxRetries).toMatchObject({ name: "MaxRetriesPerRequestError" });
    // The dispatcher's producer: no offline queue.
    const producer = client(deadUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    const offline = await caught(() => producer.redis.ping());
    expect(offline).toMatchObject({
      message: "Stream isn't writeable and enableOfflineQueue options is false",
    });
    for (const err of [closed, ended.events[0], maxRetries, offline]) {
      expect(isDependencyUnavailable(err)).toBe(true);
    }
  });

  it("recognises the dispatcher's enqueue timeout message", async () => {
    // dispatch() never throws (the run stays queued in Postgres); its reason only reaches the log,
    // so the message is taken from there.
    const reasons: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => reasons.push(JSON.parse(line).err) });
    const dispatcher = new Dispatcher({ redisUrl: deadUrl, logger, enqueueTimeoutMs: 100 });
    onTestFinished(() => dispatcher.close());
    const data = { kind: "run", projectId: randomUUID(), executionId: randomUUID(), dispatchSeq: 1 } as const;
    expect(await dispatcher.dispatch([{ projectId: data.projectId, queueName: "q", data, jobId: "j" }])).toBe(
      0,
    );
    expect(reasons).toEqual(["Error: enqueue timed out after 100 ms"]);
    expect(isDependencyUnavailable(new Error(reasons[0]!.replace(/^Error: /, "")))).toBe(true);
  });
});

describe("isDependencyUnavailable: genuine bugs stay bugs", () => {
  it("is false for query, constraint, type and Redis command errors from the same drivers", async () => {
    const { pool, prisma } = database(inject("databaseUrl"));
    const syntax = await caught(() => pool.query("selec 1"));
    expect(syntax).toMatchObject({ code: "42601" });
    // 08P01 is in the connection-exception class, but a wrong parameter count raises it too.
    const bind = await caught(() => pool.query("select $1::int + $2::int", [1]));
    expect(bind).toMatchObject({ code: "08P01" });
    const rawSyntax = await caught(() => prisma.$queryRawUnsafe("selec 1"));
    expect(rawSyntax).toMatchObject({ code: "P2010" });
    const id = randomUUID();
    await prisma.project.create({ data: { id, name: "dup" } });
    const duplicate = await caught(() => prisma.project.create({ data: { id, name: "dup" } }));
    expect(duplicate).toMatchObject({ code: "P2002" });
    const missing = await caught(() => prisma.project.update({ where: { id: randomUUID() }, data: {} }));
    expect(missing).toMatchObject({ code: "P2025" });

    const redis = new Redis(inject("redisUrl"));
    onTestFinished(() => redis.disconnect());
    const key = `spool-test:${randomUUID()}`;
    await redis.set(key, "x", "EX", 60);
    const wrongType = await caught(() => redis.lpush(key, "y"));
    expect(String((wrongType as Error).message)).toMatch(/^WRONGTYPE/);

    const typeError = await caught(async () => (JSON.parse("null") as { a: { b: number } }).a.b);
    expect(typeError).toBeInstanceOf(TypeError);

    for (const err of [syntax, bind, rawSyntax, duplicate, missing, wrongType, typeError]) {
      expect(isDependencyUnavailable(err)).toBe(false);
    }
    expect(isDependencyUnavailable(notFound("execution", "x"))).toBe(false);
    for (const value of [undefined, null, "ECONNREFUSED", 42])
      expect(isDependencyUnavailable(value)).toBe(false);
  });

  it("terminates on a cyclic cause chain", () => {
    const a = new Error("a");
    const b = new Error("b", { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(isDependencyUnavailable(a)).toBe(false);
  });
});

/** A pool's connection, retried while connecting times out (the pool under test has a short timeout). */
async function eventuallyConnected(pool: pg.Pool): Promise<pg.PoolClient> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await pool.connect();
    } catch (err) {
      if (attempt >= 50) throw err;
    }
  }
}
