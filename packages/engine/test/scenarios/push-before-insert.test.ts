// A new run of a workflow a push worker serves is pushed while its insert is on its way
// (PushDispatcher.pushBeforeInsert): the worker's calls that come first wait for the run to be in,
// nothing it reports is lost, and a run that cannot be inserted is cancelled on its worker.
import { createLogger } from "@spool/shared";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { runJobId } from "../../src/dispatch/dispatcher.js";
import { claimOf } from "../../src/execution/claim.js";
import { PushDispatcher } from "../../src/push/push-dispatcher.js";
import type { RemoteCaller } from "../../src/remote/remote-runs.js";
import { createTestEngine } from "../engine-fixture.js";
import { databaseOfThisFile } from "../file-database.js";
import { acceptingPushWorker, type FakePushWorker } from "../push-worker-fixture.js";

describe("runs pushed before their insert", () => {
  let env: Awaited<ReturnType<typeof createTestEngine>>;
  /** Another API replica: an engine of its own over the same database. */
  let replica: Awaited<ReturnType<typeof createTestEngine>>["engine"];
  let dispatcher: PushDispatcher;
  const workers: Record<string, FakePushWorker & { id: string }> = {};
  const logger = createLogger("push-before-insert-test", "silent");

  const until = async <T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> => {
    for (;;) {
      const found = await what();
      if (found !== undefined) return found;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const row = (id: string) => env.prisma.execution.findUnique({ where: { id } });
  /** The claim a run started as inserted stands under, as its push carries it. */
  const callerFor = (workflowId: string): RemoteCaller => ({
    workerId: workers[workflowId]!.id,
    claim: { dispatchSeq: 0, lease: 1 },
  });
  const step = (stepKey: string) => ({
    stepKey,
    output: { done: stepKey },
    status: "completed" as const,
    error: null,
  });

  /**
   * Holds off every write to executions (in this file's own database) until released, as a slow
   * insert would be held up: reads go on. Released at the test's end at the latest, so that a
   * failure while it holds leaves the next tests a database they can write to.
   */
  async function holdInserts(): Promise<() => Promise<void>> {
    const client = new pg.Client({ connectionString: await databaseOfThisFile() });
    await client.connect();
    await client.query("BEGIN");
    await client.query("LOCK TABLE executions IN SHARE MODE");
    let released: Promise<void> | undefined;
    const release = () => {
      released ??= client.query("COMMIT").then(() => client.end());
      return released;
    };
    onTestFinished(() => release());
    return release;
  }

  /**
   * Watches `engine`'s reads of run `id` by the worker routes (spool_remote_identify): how many it
   * made, and a promise of its first that found nothing.
   */
  function identifyReads(engine: typeof replica, id: string) {
    const pool = engine.pool;
    const query = pool.query.bind(pool) as (q: unknown) => Promise<pg.QueryResult>;
    let missed: () => void = () => {};
    const watched = {
      reads: 0,
      firstMissed: new Promise<void>((resolve) => {
        missed = resolve;
      }),
    };
    const spy = async (q: unknown) => {
      const result = await query(q);
      const named = q as { name?: string; values?: unknown[] };
      if (named?.name === "spool_remote_identify" && named.values?.[0] === id) {
        watched.reads++;
        if (result.rowCount === 0) missed();
      }
      return result;
    };
    pool.query = spy as unknown as typeof pool.query;
    onTestFinished(() => {
      pool.query = query as unknown as typeof pool.query;
    });
    return watched;
  }

  /**
   * A push dispatcher that looks the workers up once, as it starts: a registration archived later
   * stays pushable for it (wf-gone), and one made later is not (wf-stop, for all but its own).
   */
  async function startedDispatcher(): Promise<PushDispatcher> {
    const started = new PushDispatcher(env.engine, {
      logger,
      refreshMs: 60_000,
      projectIds: [env.projectId],
    });
    started.start();
    await started.refresh();
    return started;
  }

  beforeAll(async () => {
    env = await createTestEngine({
      workflows: ["wf-wait", "wf-other", "wf-gone", "wf-busy", "wf-max", "wf-stop"],
    });
    replica = (await createTestEngine()).engine;
    for (const workflowId of ["wf-wait", "wf-other", "wf-gone", "wf-busy", "wf-max"]) {
      // wf-busy's worker is at capacity for its first push; wf-gone's, behind a proxy that fails its
      // first cancel; wf-max's runs one run at a time.
      const fake = await acceptingPushWorker(
        workflowId === "wf-busy"
          ? { answer: (nth) => (nth === 0 ? 429 : 200) }
          : workflowId === "wf-gone"
            ? { cancelAnswer: (nth) => (nth === 0 ? 503 : 200) }
            : {},
      );
      const registered = await env.engine.workers.register(env.projectId, {
        deploymentId: "d1",
        mode: "push",
        pushEndpointUrl: fake.url,
        capabilities: { workflow_ids: [workflowId], spool_claims: true },
        maxConcurrentExecutions: workflowId === "wf-max" ? 1 : 10,
      });
      workers[workflowId] = { ...fake, id: registered.id };
    }
    dispatcher = await startedDispatcher();
  });
  afterAll(() => dispatcher.stop());

  it("is pushed before it is in Postgres; its worker's calls wait for the insert here, and are made again on another replica", async () => {
    const release = await holdInserts();
    const running = env.engine.executions.run(env.projectId, { workflowId: "wf-wait", input: { n: 1 } });
    const id = await until(() => workers["wf-wait"]!.pushes[0]);
    expect(await row(id)).toBeNull();

    // The worker reports its first step to the API that pushed the run, and to another replica.
    const here = env.engine.remote.saveStep(env.projectId, id, callerFor("wf-wait"), step("one"));
    const there = replica.remote.saveStep(env.projectId, id, callerFor("wf-wait"), step("one"));
    // The other replica knows nothing of the push: it looks for the run a while, then answers not
    // found, which the worker's client takes as "call again" under this claim (protocol-client.test).
    await expect(there).rejects.toMatchObject({ type: "NOT_FOUND" });
    await release();

    // The API that pushed it waited for its own insert, however long that took.
    expect(await here).toMatchObject({ stepKey: "one", status: "completed", output: { done: "one" } });
    // Made again once the run is in, the other replica's call answers what the first one stored.
    expect(await replica.remote.saveStep(env.projectId, id, callerFor("wf-wait"), step("one"))).toMatchObject(
      {
        stepKey: "one",
        status: "completed",
      },
    );
    const { receipt } = await running;
    expect(receipt.execution_id).toBe(id);
    const started = await row(id);
    expect(started).toMatchObject({
      status: "running",
      workerId: workers["wf-wait"]!.id,
      dispatchSeq: 0,
      lease: 1,
    });
    const done = await env.engine.remote.complete(env.projectId, id, callerFor("wf-wait"), "finished");
    expect(done).toMatchObject({ status: "completed", result: "finished" });
    expect(workers["wf-wait"]!.pushes).toEqual([id]);
  });

  it("another replica's call made before the insert committed looks again, and acts once it is in", async () => {
    const release = await holdInserts();
    const running = env.engine.executions.run(env.projectId, { workflowId: "wf-other", input: {} });
    const id = await until(() => workers["wf-other"]!.pushes[0]);
    const seen = identifyReads(replica, id);
    const there = replica.remote.saveStep(env.projectId, id, callerFor("wf-other"), step("one"));
    // Released only once the replica has looked and found nothing: its call must look again.
    await seen.firstMissed;
    await release();
    const answer = await there.then(
      (stored) => ({ stored }),
      (err: unknown) => ({ err }),
    );
    // It looked again rather than answer not found at once.
    expect(seen.reads).toBeGreaterThan(1);
    let stored = "stored" in answer ? answer.stored : undefined;
    if ("err" in answer) {
      // The insert took longer than the replica looks (~130 ms, a loaded machine): it answered not
      // found, and the worker's client calls again (protocol-client.test), as here.
      expect(answer.err).toMatchObject({ type: "NOT_FOUND" });
      await until(() => row(id).then((r) => r ?? undefined));
      stored = await replica.remote.saveStep(env.projectId, id, callerFor("wf-other"), step("one"));
    }
    expect(stored).toMatchObject({ stepKey: "one", status: "completed" });
    await running;
    const done = await replica.remote.complete(env.projectId, id, callerFor("wf-other"), "finished");
    expect(done).toMatchObject({ status: "completed" });
  });

  it("a run whose insert fails fails its request, and its worker is told to cancel it until it hears", async () => {
    // Archived after the dispatcher's look-up: the push goes out, the insert finds no registration.
    await env.prisma.workflowRegistration.updateMany({
      where: { projectId: env.projectId, workflowId: "wf-gone" },
      data: { archivedAt: new Date() },
    });
    await expect(
      env.engine.executions.run(env.projectId, { workflowId: "wf-gone", input: {} }),
    ).rejects.toMatchObject({ type: "NOT_FOUND" });
    // The push went out first (the insert's failure may come back before it arrives).
    const id = await until(() => workers["wf-gone"]!.pushes[0]);
    // Its first cancel was answered 503: it went again, and was heard.
    await until(() => (workers["wf-gone"]!.cancels.length >= 2 ? true : undefined));
    expect(workers["wf-gone"]!.cancels).toEqual([id, id]);
    expect(await row(id)).toBeNull();
  });

  it("a push the worker does not take (429) sends the run back to its queue, and it is pushed again, no attempt used", async () => {
    const { receipt } = await env.engine.executions.run(env.projectId, { workflowId: "wf-busy", input: {} });
    const id = receipt.execution_id;
    const again = await until(async () => {
      const r = await row(id);
      return r?.status === "running" && r.pushedLease === r.lease && r.lease > 1 ? r : undefined;
    });
    expect(workers["wf-busy"]!.pushes).toEqual([id, id]);
    expect(again.attempt).toBe(1);
    await env.engine.executions.complete(id, claimOf(again), "done remotely");
  });

  it("an API that stops while a pushed run's insert is on its way waits for it, and leaves the run to its job", async () => {
    // Registered only now: the shared dispatcher looked workers up before, so only this one serves it.
    const fake = await acceptingPushWorker();
    const registered = await env.engine.workers.register(env.projectId, {
      deploymentId: "d1",
      mode: "push",
      pushEndpointUrl: fake.url,
      capabilities: { workflow_ids: ["wf-stop"], spool_claims: true },
      maxConcurrentExecutions: 10,
    });
    const stopping = await startedDispatcher();
    try {
      const release = await holdInserts();
      const running = env.engine.executions.run(env.projectId, { workflowId: "wf-stop", input: {} });
      const id = await until(() => fake.pushes[0]);
      const stopped = stopping.stop();
      await release();
      await stopped;
      // Nothing the caller was told is accepted is lost: the run is in, still with its worker, and
      // has its job again, for another API's dispatcher (here the shared one) to adopt.
      expect((await running).receipt.execution_id).toBe(id);
      const held = await row(id);
      expect(held).toMatchObject({ status: "running", workerId: registered.id, lease: 1, pushedLease: 1 });
      const job = () => env.engine.dispatcher.jobState(env.projectId, "default", runJobId(id, 0));
      expect(["waiting", "active"]).toContain(await job());
      // Adopted, it is waited for, not pushed again; its completion ends the job.
      await env.engine.executions.complete(id, claimOf(held!), "done remotely");
      await until(async () => ((await job()) === "completed" ? true : undefined));
      expect(fake.pushes).toEqual([id]);
    } finally {
      await stopping.stop();
    }
  });

  it("a worker at its max gets no run before its insert: the next run waits in its queue for the room", async () => {
    const first = (await env.engine.executions.run(env.projectId, { workflowId: "wf-max", input: {} }))
      .receipt.execution_id;
    const second = (await env.engine.executions.run(env.projectId, { workflowId: "wf-max", input: {} }))
      .receipt.execution_id;
    expect(await row(second)).toMatchObject({ status: "queued" });
    // The first's push may arrive after its insert is done; the second's comes only with room.
    await until(() => workers["wf-max"]!.pushes[0]);
    expect(workers["wf-max"]!.pushes).toEqual([first]);

    const firstRow = await until(async () => {
      const r = await row(first);
      return r?.pushedLease === r?.lease ? r : undefined;
    });
    await env.engine.executions.complete(first, claimOf(firstRow!), "done remotely");
    // Started, then pushed: the worker took it once its lease is the one pushed.
    await until(async () => {
      const r = await row(second);
      return r?.status === "running" && r.pushedLease === r.lease ? true : undefined;
    });
    expect(workers["wf-max"]!.pushes).toEqual([first, second]);
  });
});
