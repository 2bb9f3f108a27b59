import { Redis } from "ioredis";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { deployMigrations } from "../packages/db/scripts/migrate.mjs";
import { startServicesProcess } from "./services-client.mjs";

async function queryOne(databaseUrl: string, sql: string): Promise<Record<string, unknown> | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(sql);
    return rows[0];
  } finally {
    await client.end();
  }
}

async function ping(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return await redis.ping();
  } finally {
    redis.disconnect();
  }
}

describe("scripts/services.mjs", () => {
  it("starts Postgres and Redis in a child process and stops them when asked", async () => {
    const services = await startServicesProcess({ env: { DATABASE_URL: undefined, REDIS_URL: undefined } });
    try {
      expect(services.databaseUrl).toMatch(/^postgres:\/\/.+\/spool$/);
      expect(services.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);

      expect(await queryOne(services.databaseUrl, "SELECT 1 AS one")).toEqual({ one: 1 });
      expect(await ping(services.redisUrl)).toBe("PONG");

      await deployMigrations(services.databaseUrl);
      const row = await queryOne(
        services.databaseUrl,
        `SELECT to_regclass('"_prisma_migrations"')::text AS t`,
      );
      expect(row).toEqual({ t: "_prisma_migrations" });
    } finally {
      await services.stop();
    }
    expect(services.child.exitCode).toBe(0);
    await expect(queryOne(services.databaseUrl, "SELECT 1")).rejects.toThrow();
  });

  it("global setup provides migrated services to every test file", async () => {
    const databaseUrl = inject("databaseUrl");
    const redisUrl = inject("redisUrl");
    expect(process.env.SPOOL_TEST_DATABASE_URL).toBe(databaseUrl);
    expect(process.env.SPOOL_TEST_REDIS_URL).toBe(redisUrl);
    const row = await queryOne(databaseUrl, `SELECT count(*)::int AS n FROM "_prisma_migrations"`);
    expect(row?.n).toBeGreaterThan(0);
    expect(await ping(redisUrl)).toBe("PONG");
  });
});
