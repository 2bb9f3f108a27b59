// A migrated database of the calling test file's own, dropped when the file is done. For tests whose
// subject acts on every project at once (sweeps, schedule firing with a clock set years ahead): on
// the shared database they would act on other test files' rows, and other files' schedulers on theirs.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { deployMigrations } from "../../db/scripts/migrate.mjs";

let fileDatabase: Promise<string> | undefined;

export function databaseOfThisFile(): Promise<string> {
  fileDatabase ??= (async () => {
    const name = `spool_file_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(inject("databaseUrl"));
    url.pathname = `/${name}`;
    await deployMigrations(url.toString());
    afterAll(async () => {
      const drop = new pg.Client({ connectionString: inject("databaseUrl") });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    });
    return url.toString();
  })();
  return fileDatabase;
}
