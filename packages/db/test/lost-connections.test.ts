import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDatabase } from "../src/index.js";

describe("a connection Postgres ends", () => {
  const db = createDatabase({ databaseUrl: inject("databaseUrl"), maxConnections: 2 });
  afterAll(() => db.pool.end());

  it("while a client is checked out between statements: its next statement fails, the process goes on", async () => {
    const held = await db.pool.connect();
    const { rows } = await held.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    // Waits for the end, not the 'error' event: listening for that would hide what is tested here,
    // an 'error' nobody else listens for (without the pool's listener the process would throw).
    const ended = new Promise((resolve) => held.once("end", resolve));
    // As a Postgres restart ends every connection (SQLSTATE 57P01), with no statement of this client running.
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
    await admin.end();
    await ended;
    await expect(held.query("SELECT 1")).rejects.toThrow();
    held.release();
    // The pool opens a new connection for what comes next, Prisma's queries included.
    expect((await db.pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    expect(await db.prisma.$queryRawUnsafe<{ n: number }[]>("SELECT 2 AS n")).toEqual([{ n: 2 }]);
  });
});
