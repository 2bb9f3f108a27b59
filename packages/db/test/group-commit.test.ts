import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GroupCommitPool, queryTogether, queryTogetherAlone } from "../src/group-commit.js";

describe("group commit of named statements", () => {
  const url = inject("databaseUrl");
  // Typed as the pool it stands in for everywhere else.
  const pool: pg.Pool = new GroupCommitPool({ connectionString: url, max: 2 });
  const table = `group_commit_${randomBytes(4).toString("hex")}`;
  const bump = (id: number) =>
    pool.query<{ id: number; v: number; tx: string }>({
      name: `${table}_bump`,
      text: `UPDATE ${table} SET v = v + 1 WHERE id = $1 RETURNING id, v, txid_current()::text AS tx`,
      values: [id],
    });
  const insert = (id: number) =>
    pool.query<{ id: number }>({
      name: `${table}_insert`,
      text: `INSERT INTO ${table} VALUES ($1, 0) RETURNING id`,
      values: [id],
    });
  const sleep = (seconds: number) =>
    pool.query({ name: `${table}_sleep`, text: "SELECT pg_sleep($1::float8) AS slept", values: [seconds] });
  const values = async (ids: number[]) => {
    const { rows } = await pool.query<{ id: number; v: number }>(
      `SELECT id, v FROM ${table} WHERE id = ANY($1::int[]) ORDER BY id`,
      [ids],
    );
    return rows;
  };

  beforeAll(async () => {
    await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v int NOT NULL)`);
    await pool.query(`INSERT INTO ${table} SELECT g, 0 FROM generate_series(1, 30) g`);
  });
  afterAll(async () => {
    await pool.query(`DROP TABLE ${table}`);
    await pool.end();
  });

  it("statements issued together commit as one transaction, each caller getting its own rows", async () => {
    const results = await Promise.all([bump(1), bump(2), bump(3)]);
    expect(results.map((r) => r.rows.map(({ id, v }: { id: number; v: number }) => ({ id, v })))).toEqual([
      [{ id: 1, v: 1 }],
      [{ id: 2, v: 1 }],
      [{ id: 3, v: 1 }],
    ]);
    expect(results.map((r) => r.rowCount)).toEqual([1, 1, 1]);
    expect(new Set(results.map((r) => r.rows[0]!.tx)).size).toBe(1);
  });

  it("statements queried together share one group, never split by the statements queued before them", async () => {
    const narrow = new GroupCommitPool({ connectionString: url, max: 2 }, { maxGroups: 1, maxStatements: 4 });
    try {
      const bumpOf = (id: number) => ({
        name: `${table}_bump`,
        text: `UPDATE ${table} SET v = v + 1 WHERE id = $1 RETURNING id, v, txid_current()::text AS tx`,
        values: [id],
      });
      const txOf = async (results: Promise<pg.QueryResult>[]) =>
        (await Promise.all(results)).map((r) => r.rows[0].tx as string);
      // Queued in one turn: three alone, then three together (a group holds four at most).
      const alone = [15, 16, 17].map((id) => narrow.query(bumpOf(id)));
      const together = queryTogether(narrow, [18, 19, 20].map(bumpOf));
      const [aloneTx, togetherTx] = [await txOf(alone), await txOf(together)];
      expect(new Set(togetherTx).size).toBe(1);
      expect(aloneTx).not.toContain(togetherTx[0]);
      // More than a group holds: one group of their own.
      const many = await txOf(queryTogether(narrow, [15, 16, 17, 18, 19].map(bumpOf)));
      expect(new Set(many).size).toBe(1);
      expect(await values([15, 18, 20])).toEqual([
        { id: 15, v: 2 },
        { id: 18, v: 2 },
        { id: 20, v: 1 },
      ]);
    } finally {
      await narrow.end();
    }
  });

  it("statements together alone commit as one transaction, or fail together when a lock wait outlasts their timeout", async () => {
    const bumpOf = (id: number) => ({
      name: `${table}_bump`,
      text: `UPDATE ${table} SET v = v + 1 WHERE id = $1 RETURNING id, v, txid_current()::text AS tx`,
      values: [id],
    });
    const done = await Promise.all(queryTogetherAlone(pool, [bumpOf(21), bumpOf(22)], "100ms"));
    expect(new Set(done.map((r) => r.rows[0].tx)).size).toBe(1);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM ${table} WHERE id = 22 FOR UPDATE`);
      const settled = await Promise.allSettled(queryTogetherAlone(pool, [bumpOf(21), bumpOf(22)], "100ms"));
      expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
      expect(settled.map((s) => (s as PromiseRejectedResult).reason.code)).toEqual(["55P03", "55P03"]);
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    // Rolled back whole: the first statement's write is gone too.
    expect(await values([21, 22])).toEqual([
      { id: 21, v: 1 },
      { id: 22, v: 1 },
    ]);
    // The timeout did not stay on a connection.
    expect((await pool.query<{ lock_timeout: string }>("SHOW lock_timeout")).rows[0]!.lock_timeout).toBe("0");
  });

  it("a statement is described once per connection, returns the same rows and types after, and again on the next connection", async () => {
    const one = new GroupCommitPool({ connectionString: url, max: 1 }, { maxGroups: 1 });
    // Counts the Describe messages sent on the pool's connection (node-postgres' own queries send one too).
    let describes = 0;
    one.on("connect", (client) => {
      const connection = (client as unknown as { connection: { describe: (...a: unknown[]) => void } })
        .connection;
      const describe = connection.describe.bind(connection);
      connection.describe = (...a: unknown[]) => {
        describes++;
        describe(...a);
      };
    });
    const shaped = (id: number): Promise<pg.QueryResult> =>
      one.query({
        name: `${table}_shaped`,
        text: `SELECT id, v, now() AS at, NULL::text AS note FROM ${table} WHERE id = $1`,
        values: [id],
      });
    const touch = (id: number): Promise<pg.QueryResult> =>
      one.query({ name: `${table}_touch`, text: `UPDATE ${table} SET v = v WHERE id = $1`, values: [id] });
    const failing = (): Promise<pg.QueryResult> =>
      one.query({
        name: `${table}_failing`,
        text: `SELECT 1 / (v - v) AS boom FROM ${table} WHERE id = 25`,
      });
    try {
      const perRound: number[] = [];
      for (let round = 0; round < 3; round++) {
        const before = describes;
        const [a, b, t] = await Promise.all([shaped(25), shaped(26), touch(25)]);
        perRound.push(describes - before);
        expect(a.rows).toEqual([{ id: 25, v: 0, at: expect.any(Date), note: null }]);
        expect(b.rows).toEqual([{ id: 26, v: 0, at: expect.any(Date), note: null }]);
        expect(a.fields.map((f) => f.name)).toEqual(["id", "v", "at", "note"]);
        expect(t.rowCount).toBe(1);
        expect(t.rows).toEqual([]);
      }
      // All three the first time (nothing known yet), none after.
      expect(perRound).toEqual([3, 0, 0]);

      // A statement's error ends its connection (the pool drops a client whose query failed); what
      // the next connection runs is described again there.
      const settled = await Promise.allSettled([shaped(25), failing()]);
      expect(settled.map((r) => r.status)).toEqual(["fulfilled", "rejected"]);
      const before = describes;
      const [again] = await Promise.all([shaped(26), touch(26)]);
      expect(describes - before).toBe(2);
      expect(again.rows).toEqual([{ id: 26, v: 0, at: expect.any(Date), note: null }]);
    } finally {
      await one.end();
    }
  });

  it("a statement that fails fails only its own caller; the others commit", async () => {
    const settled = await Promise.allSettled([insert(2001), insert(1), insert(2002)]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    expect(await values([2001, 2002])).toEqual([
      { id: 2001, v: 0 },
      { id: 2002, v: 0 },
    ]);
  });

  it("a value that cannot be sent fails its own statement before anything is sent", async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const settled = await Promise.allSettled([
      bump(10),
      pool.query({
        name: `${table}_bump`,
        text: `UPDATE ${table} SET v = v + 1 WHERE id = $1 RETURNING id, v, txid_current()::text AS tx`,
        values: [circular],
      }),
      bump(11),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await values([10, 11])).toEqual([
      { id: 10, v: 1 },
      { id: 11, v: 1 },
    ]);
  });

  it("a statement waiting for a row lock does not hold back the others grouped with it", async () => {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM ${table} WHERE id = 5 FOR UPDATE`);
      const blocked = bump(5);
      const free = await Promise.all([bump(4), bump(6)]);
      expect(free.map((r) => r.rows[0]!.v)).toEqual([1, 1]);
      // Committed, not only answered: another connection sees them while id 5 is still locked.
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      const seen = await other.query(`SELECT id, v FROM ${table} WHERE id IN (4, 5, 6) ORDER BY id`);
      await other.end();
      expect(seen.rows).toEqual([
        { id: 4, v: 1 },
        { id: 5, v: 0 },
        { id: 6, v: 1 },
      ]);
      await holder.query("COMMIT");
      expect((await blocked).rows[0]!.v).toBe(1);
    } finally {
      await holder.end();
    }
    // The group's lock timeout did not stay on the connection.
    expect((await pool.query<{ lock_timeout: string }>("SHOW lock_timeout")).rows[0]!.lock_timeout).toBe("0");
  });

  it("statements waiting for row locks leave the groups' slots to the rest", async () => {
    const roomy: pg.Pool = new GroupCommitPool({ connectionString: url, max: 4 }, { maxGroups: 2 });
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM ${table} WHERE id IN (12, 13) FOR UPDATE`);
      const bumpOn = (id: number) =>
        roomy.query<{ v: number }>({
          name: `${table}_bump`,
          text: `UPDATE ${table} SET v = v + 1 WHERE id = $1 RETURNING id, v, txid_current()::text AS tx`,
          values: [id],
        });
      // One after the other, so each goes out alone and takes a slot; the third waits for one.
      const first = bumpOn(12);
      await new Promise((resolve) => setImmediate(resolve));
      const second = bumpOn(13);
      await new Promise((resolve) => setImmediate(resolve));
      expect((await bumpOn(14)).rows[0]!.v).toBe(1);
      await holder.query("COMMIT");
      expect((await Promise.all([first, second])).map((r) => r.rows[0]!.v)).toEqual([1, 1]);
    } finally {
      await holder.end();
      await roomy.end();
    }
  });

  it("a connection lost under a group fails every statement in it, and the pool goes on", async () => {
    const group = Promise.allSettled([bump(7), sleep(30), bump(8)]);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    // Waits until the group is on the wire (its backend sleeping in it), then ends that connection.
    const sleeping = async () =>
      (
        await admin.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep' AND query LIKE '%pg_sleep($1::float8)%'",
        )
      ).rows[0]?.pid;
    await expect.poll(sleeping).toBeDefined();
    await admin.query("SELECT pg_terminate_backend($1)", [await sleeping()]);
    await admin.end();
    expect((await group).map((s) => s.status)).toEqual(["rejected", "rejected", "rejected"]);
    // Rolled back with the connection: nothing of the group was committed.
    expect(await values([7, 8])).toEqual([
      { id: 7, v: 0 },
      { id: 8, v: 0 },
    ]);
    expect((await bump(9)).rows[0]!.v).toBe(1);
  });
});
