// An API process pushes new runs to a remote worker without BullMQ jobs, then dies (SIGKILL) while
// the worker runs them. Nothing held their jobs' locks: the scheduler, seeing the process gone from
// Redis's clients, gives the runs their jobs, and the other API's dispatcher waits for them (their
// worker took the pushes) instead of pushing them again.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@spool/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countEffects } from "../fixtures/file-effects.js";
import { eventually, type System, startSystem } from "./harness.js";

describe("the API that pushed runs without jobs dies (real processes)", () => {
  let sys: System;
  const effectsFile = join(mkdtempSync(join(tmpdir(), "spool-effects-")), "effects.jsonl");

  beforeAll(async () => {
    // A database of its own: the API it kills pushes every project's runs.
    sys = await startSystem({ ownDatabase: true });
    await sys.startScheduler();
  });
  afterAll(() => sys?.stop());

  it("the scheduler gives its runs their jobs, the other API waits for them, and no step runs twice", async () => {
    const pusher = await sys.startApiProcess(undefined, { SPOOL_PUSH_DISPATCH: "true" });
    const worker = await sys.startRemoteWorker({ SPOOL_TEST_EFFECTS_FILE: effectsFile });
    try {
      await pusher.waitFor((l) => l.msg === "pushing runs of queue" && l.project_id === sys.projectId);
      const viaPusher = createClient({ baseUrl: pusher.url, apiKey: sys.apiKey, projectId: sys.projectId });
      const ids = await Promise.all(
        [1, 2, 3].map(async () => (await viaPusher.run("r-gated", {})).execution_id),
      );
      await eventually(
        async () => (ids.every((id) => countEffects(id, "step-2", effectsFile) === 1) ? true : undefined),
        20_000,
        "every run in its second step",
      );
      for (const id of ids) {
        const { rows } = await sys.db.query("SELECT push_holder FROM executions WHERE id = $1", [id]);
        expect(rows[0].push_holder).toEqual(expect.any(String));
        expect(await sys.engine.dispatcher.jobState(sys.projectId, "default", `${id}.0`)).toBe("unknown");
      }

      await pusher.kill("SIGKILL");
      await eventually(
        async () => {
          const { rows } = await sys.db.query(
            "SELECT count(*)::int AS n FROM executions WHERE id = ANY($1::uuid[]) AND push_holder IS NULL",
            [ids],
          );
          return rows[0].n === ids.length ? true : undefined;
        },
        30_000,
        "the scheduler to give the runs their jobs",
      );
      writeFileSync(`${effectsFile}.open`, "");
      for (const id of ids) {
        const done = await sys.client.executions.waitForResult(id, { timeoutMs: 30_000 });
        expect(done).toMatchObject({ status: "completed", result: { ok: true } });
        expect(["step-1", "step-2", "step-3"].map((l) => countEffects(id, l, effectsFile))).toEqual([
          1, 1, 1,
        ]);
      }
    } finally {
      await worker.kill("SIGKILL");
      await pusher.kill("SIGKILL");
    }
  });
});
