import { afterAll, describe, expect, inject, it } from "vitest";
import { AsyncCommits, createDatabase } from "../src/index.js";

const SETTING = "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'";

describe("AsyncCommits", () => {
  const db = createDatabase({ databaseUrl: inject("databaseUrl"), maxConnections: 2 });
  afterAll(() => Promise.all([db.pool.end(), db.asyncCommits.end()]));

  it("runs its statements on connections that turned synchronous_commit off themselves", async () => {
    const { rows } = await db.asyncCommits.query({ text: SETTING });
    expect(rows[0]).toEqual({ setting: "off", source: "client" });
    expect(db.asyncCommits.synchronous).toBe(false);
    // The main pool's sessions keep the server's setting.
    expect((await db.pool.query(SETTING)).rows[0]?.source).not.toBe("client");
  });

  it("runs them on the main pool, for good, when its own connections cannot open where the main pool's can", async () => {
    // As a pooler that refuses the `options` startup parameter would: nothing listens on port 1.
    const refused = new AsyncCommits("postgres://spool:spool@127.0.0.1:1/spool", 1, db.pool);
    try {
      const { rows } = await refused.query({ text: SETTING });
      expect(rows[0]?.source).not.toBe("client");
      expect(refused.synchronous).toBe(true);
    } finally {
      await refused.end();
    }
  });
});
