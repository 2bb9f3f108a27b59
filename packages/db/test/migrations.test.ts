import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { deployMigrations, diffDatamodels, listMigrations, schemaPath } from "../scripts/migrate.mjs";

/** A throwaway database on the test server. */
async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: inject("databaseUrl") });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(inject("databaseUrl"));
  url.pathname = `/${name}`;
  return url.toString();
}

/** Everything that defines the public schema: columns, constraints and indexes, in a stable order. */
async function describeSchema(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const columns = await client.query(`
      SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length,
             datetime_precision
      FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
      ORDER BY table_name, column_name`);
    const constraints = await client.query(`
      SELECT conrelid::regclass::text AS table_name, conname, contype, pg_get_constraintdef(oid) AS def
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> '_prisma_migrations'
      ORDER BY 1, 2`);
    const indexes = await client.query(`
      SELECT tablename, indexname, indexdef FROM pg_indexes
      WHERE schemaname = 'public' AND tablename <> '_prisma_migrations' ORDER BY 1, 2`);
    return { columns: columns.rows, constraints: constraints.rows, indexes: indexes.rows };
  } finally {
    await client.end();
  }
}

describe("migrations", () => {
  const urls: string[] = [];
  afterAll(async () => {
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    for (const url of urls)
      await admin.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
    await admin.end();
  });

  it("produce exactly the schema that schema.prisma describes", async () => {
    const migrated = await freshDatabase("spool_mig_a");
    const reference = await freshDatabase("spool_mig_b");
    urls.push(migrated, reference);

    const applied = await deployMigrations(migrated);
    expect(applied).toEqual(listMigrations().map((m) => m.name));
    expect(applied.length).toBeGreaterThan(0);

    // The reference: schema.prisma turned straight into SQL by Prisma's engine.
    const sql = await diffDatamodels(reference, null, readFileSync(schemaPath, "utf8"));
    const client = new pg.Client({ connectionString: reference });
    await client.connect();
    await client.query(sql);
    await client.end();

    const [a, b] = await Promise.all([describeSchema(migrated), describeSchema(reference)]);
    expect(a.columns.length).toBeGreaterThan(50);
    expect(a).toEqual(b);
  });

  it("deploy is idempotent, records Prisma's history, and is safe to run concurrently", async () => {
    const url = await freshDatabase("spool_mig_c");
    urls.push(url);
    const results = await Promise.all([deployMigrations(url), deployMigrations(url), deployMigrations(url)]);
    // Exactly one of the three applied each migration; the others found it done.
    expect(results.flat().sort()).toEqual(
      listMigrations()
        .map((m) => m.name)
        .sort(),
    );
    expect(await deployMigrations(url)).toEqual([]);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(
      `SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY 1`,
    );
    await client.end();
    expect(rows.map((r) => [r.migration_name, r.checksum, r.applied_steps_count])).toEqual(
      listMigrations().map((m) => [m.name, m.checksum, 1]),
    );
    expect(rows.every((r) => r.finished_at instanceof Date)).toBe(true);
  });
});
