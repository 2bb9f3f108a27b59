#!/usr/bin/env node
// Spool's migration tool: Prisma-format migrations that work without network.
//
// Prisma 7's CLI downloads a native schema engine at run time, which these machines cannot reach.
// So we split the job:
//   - `create <name>` asks Prisma's schema engine (compiled to wasm, from npm) for the SQL between the
//     schema as of the last migration (prisma/migrations/schema-snapshot.prisma) and schema.prisma.
//     Diffing two datamodels needs no introspection, which avoids the adapter-pg bugs that shadow
//     databases hit. The engine still opens a connection at start-up, so DATABASE_URL must point at
//     any reachable Postgres; nothing is written to it.
//   - `deploy` applies pending migrations itself and records them in `_prisma_migrations` exactly as
//     Prisma does (sha256 checksum, started/finished), so the stock CLI reads the same history.
//     An advisory lock makes concurrent deploys (api, worker and scheduler starting together) safe.
//   - `status` lists applied and pending migrations.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const here = dirname(fileURLToPath(import.meta.url));
export const prismaDir = resolve(here, "../../../prisma");
export const migrationsDir = join(prismaDir, "migrations");
export const schemaPath = join(prismaDir, "schema.prisma");
const snapshotPath = join(migrationsDir, "schema-snapshot.prisma");
const ADVISORY_LOCK_ID = 7_370_130_001;

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/** Migration directories in apply order, with their SQL and Prisma's checksum. */
export function listMigrations(dir = migrationsDir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, "migration.sql")))
    .map((e) => e.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/**
 * Applies pending migrations to `databaseUrl`. Safe to call from several processes at once.
 * Returns the names applied. Throws on a failed earlier migration (as Prisma's P3009 does).
 */
export async function deployMigrations(databaseUrl, { log = () => {} } = {}) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [ADVISORY_LOCK_ID]);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const failed = rows.find((r) => r.finished_at === null);
    if (failed) {
      throw new Error(
        `migration ${failed.migration_name} failed earlier and blocks later ones; fix the database, then delete its row from _prisma_migrations`,
      );
    }
    const applied = new Map(rows.map((r) => [r.migration_name, r.checksum]));
    const done = [];
    for (const m of listMigrations()) {
      if (applied.has(m.name)) {
        if (applied.get(m.name) !== m.checksum) log(`warning: ${m.name} was edited after it was applied`);
        continue;
      }
      const id = randomUUID();
      await client.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name) VALUES ($1, $2, $3)`,
        [id, m.checksum, m.name],
      );
      try {
        // Postgres DDL is transactional: a failing migration leaves nothing half-applied.
        await client.query("BEGIN");
        await client.query(m.sql);
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        );
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK");
        await client.query(`UPDATE "_prisma_migrations" SET logs = $2 WHERE id = $1`, [id, String(err)]);
        throw new Error(`migration ${m.name} failed: ${err.message}`);
      }
      log(`applied ${m.name}`);
      done.push(m.name);
    }
    return done;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [ADVISORY_LOCK_ID]).catch(() => {});
    await client.end();
  }
}

/** Loads Prisma's wasm schema engine (Node cannot import .wasm as ESM, so it is instantiated here). */
async function openSchemaEngine(databaseUrl, schema) {
  const require = createRequire(import.meta.url);
  const bgPath = require.resolve("@prisma/schema-engine-wasm/schema_engine_bg");
  const bg = await import("@prisma/schema-engine-wasm/schema_engine_bg");
  const wasmBytes = readFileSync(bgPath.replace(/\.js$/, ".wasm"));
  const { instance } = await WebAssembly.instantiate(wasmBytes, { "./schema_engine_bg.js": bg });
  bg.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start();
  // Without a registry an engine panic surfaces only as "reading 'set_message'".
  globalThis.PRISMA_WASM_PANIC_REGISTRY = {
    set_message: (m) => {
      process.stderr.write(`schema engine panic: ${m}\n`);
    },
  };
  const { PrismaPg } = await import("@prisma/adapter-pg");
  const { bindMigrationAwareSqlAdapterFactory } = await import("@prisma/driver-adapter-utils");
  const u = new URL(databaseUrl);
  // Discrete fields, not connectionString: adapter-pg lets a connection string override the database.
  const factory = new PrismaPg({
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1) || "postgres",
  });
  return bg.SchemaEngine.new(
    { datamodels: [["schema.prisma", schema]] },
    () => {},
    bindMigrationAwareSqlAdapterFactory(factory),
  );
}

const datamodel = (content) => ({ tag: "schemaDatamodel", files: [{ path: "schema.prisma", content }] });

/** SQL that turns the `from` datamodel (or an empty database when null) into `to`. Empty string: no change. */
export async function diffDatamodels(databaseUrl, from, to) {
  const engine = await openSchemaEngine(databaseUrl, to);
  const result = await engine.diff({
    from: from === null ? { tag: "empty" } : datamodel(from),
    to: datamodel(to),
    script: true,
    exitCode: null,
    filters: { externalTables: [], externalEnums: [] },
  });
  const sql = result.stdout ?? "";
  return sql.includes("-- This is an empty migration.") ? "" : sql;
}

async function createMigration(databaseUrl, name) {
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error("migration name must be snake_case: [a-z0-9_]+");
  const schema = readFileSync(schemaPath, "utf8");
  const previous = existsSync(snapshotPath) ? readFileSync(snapshotPath, "utf8") : null;
  const sql = await diffDatamodels(databaseUrl, previous, schema);
  if (!sql.trim()) return null;
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
  const dir = join(migrationsDir, `${stamp}_${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "migration.sql"), sql);
  writeFileSync(
    join(migrationsDir, "migration_lock.toml"),
    '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n',
  );
  writeFileSync(snapshotPath, schema);
  return dir;
}

async function main() {
  const [command, arg] = process.argv.slice(2);
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("DATABASE_URL is not set (start one with `npm run services`)");
  if (command === "deploy") {
    const applied = await deployMigrations(url, { log: (m) => console.log(m) });
    console.log(applied.length ? `${applied.length} migration(s) applied` : "database is up to date");
  } else if (command === "create") {
    if (!arg) throw new Error("usage: migrate.mjs create <name>");
    const dir = await createMigration(url, arg);
    console.log(dir ? `created ${dir}` : "schema.prisma has no changes since the last migration");
  } else if (command === "status") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query(
      `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL`,
    );
    await client.end();
    const applied = new Set(rows.map((r) => r.migration_name));
    for (const m of listMigrations())
      console.log(`${applied.has(m.name) ? "applied" : "pending"}  ${m.name}`);
  } else {
    throw new Error("usage: migrate.mjs deploy | create <name> | status");
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    // The adapter's pool keeps the process alive for a while; exit explicitly.
    () => process.exit(0),
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
