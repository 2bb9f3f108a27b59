import { beforeAll, describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

describe("event triggers and schedules API", () => {
  let p: { projectId: string; key: string };
  const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
    api.request(path, { ...init, key: p.key, projectId: p.projectId });
  beforeAll(async () => {
    p = await api.createProject();
    await call("/api/v1/workers/deployments", { method: "POST", json: { deployment_id: "d1" } });
    await call("/api/v1/workers/deployments/d1/workflows", {
      method: "POST",
      json: { workflows: [{ workflow_id: "consumer" }] },
    });
  });

  it("registers (upserts), lists and deletes a trigger that starts at the current sequence", async () => {
    await call("/api/v1/events/publish", { method: "POST", json: { topic: "t", data: {} } });
    const body = {
      workflow_id: "consumer",
      deployment_id: "d1",
      event_topic: "t",
      batch_size: 10,
      batch_timeout_seconds: 5,
    };
    const res = await call("/api/v1/event-triggers/register", { method: "POST", json: body });
    expect(res.status).toBe(200);
    const { trigger } = (await res.json()) as { trigger: Record<string, unknown> };
    expect(trigger).toMatchObject({ ...body, queue_name: null, status: "active", last_sequence_id: 1 });
    const again = (await (
      await call("/api/v1/event-triggers/register", {
        method: "POST",
        json: { ...body, batch_size: 20, queue_name: "q" },
      })
    ).json()) as { trigger: Record<string, unknown> };
    expect(again.trigger).toMatchObject({
      id: trigger.id,
      batch_size: 20,
      queue_name: "q",
      last_sequence_id: 1,
    });
    const list = (await (await call("/api/v1/event-triggers")).json()) as { triggers: { id: string }[] };
    expect(list.triggers.map((t) => t.id)).toEqual([trigger.id]);
    expect((await call(`/api/v1/event-triggers/${trigger.id}`, { method: "DELETE" })).status).toBe(204);
    await expectError(
      await call(`/api/v1/event-triggers/${trigger.id}`, { method: "DELETE" }),
      404,
      "NOT_FOUND",
    );
  });

  it("pauses and resumes a trigger through the API; a worker registering it again leaves it paused", async () => {
    const json = async <T>(res: Promise<Response>) => (await (await res).json()) as T;
    type Trigger = { id: string; status: string; paused_by_user: boolean };
    const body = { workflow_id: "consumer", deployment_id: "d1", event_topic: "pausable", batch_size: 2 };
    const register = () =>
      json<{ trigger: Trigger }>(call("/api/v1/event-triggers/register", { method: "POST", json: body }));
    const setStatus = (id: string, status: string) =>
      call(`/api/v1/event-triggers/${id}`, { method: "PATCH", json: { status } });
    const { trigger } = await register();

    expect(await json<Trigger>(setStatus(trigger.id, "paused"))).toMatchObject({
      id: trigger.id,
      status: "paused",
      paused_by_user: true,
    });
    // Every worker start registers what its code declares: a pause through the API outlives that.
    expect((await register()).trigger).toMatchObject({ status: "paused", paused_by_user: true });
    expect(await json<Trigger>(setStatus(trigger.id, "active"))).toMatchObject({
      status: "active",
      paused_by_user: false,
    });

    await expectError(await setStatus(trigger.id, "stopped"), 400, "INVALID_INPUT");
    await expectError(await setStatus("not-a-trigger", "paused"), 404, "NOT_FOUND");
    await call(`/api/v1/event-triggers/${trigger.id}`, { method: "DELETE" });
  });

  it("a trigger whose workflow was archived cannot be resumed (409) until it is registered again", async () => {
    await call("/api/v1/workers/deployments/d1/workflows", {
      method: "POST",
      json: { workflows: [{ workflow_id: "retired" }] },
    });
    const body = { workflow_id: "retired", deployment_id: "d1", event_topic: "r", batch_size: 1 };
    const { trigger } = (await (
      await call("/api/v1/event-triggers/register", { method: "POST", json: body })
    ).json()) as { trigger: { id: string } };
    expect((await call("/api/v1/workflows/retired", { method: "DELETE" })).status).toBe(204);
    const refused = await call(`/api/v1/event-triggers/${trigger.id}`, {
      method: "PATCH",
      json: { status: "active" },
    });
    expect((await expectError(refused, 409, "CONFLICT")).error).toContain("not registered");

    // Registered again (as a worker's start does), the trigger paused for want of a worker resumes.
    await call("/api/v1/workers/deployments/d1/workflows", {
      method: "POST",
      json: { workflows: [{ workflow_id: "retired" }] },
    });
    const again = (await (
      await call("/api/v1/event-triggers/register", { method: "POST", json: body })
    ).json()) as { trigger: { status: string; paused_by_user: boolean } };
    expect(again.trigger).toMatchObject({ status: "active", paused_by_user: false });
    await call(`/api/v1/event-triggers/${trigger.id}`, { method: "DELETE" });
  });

  it("404 for an unknown deployment or workflow, 400 for bad values; nothing is created", async () => {
    const base = { workflow_id: "consumer", deployment_id: "d1", event_topic: "x", batch_size: 1 };
    const post = (json: unknown) => call("/api/v1/event-triggers/register", { method: "POST", json });
    await expectError(await post({ ...base, deployment_id: "nope" }), 404, "NOT_FOUND");
    await expectError(await post({ ...base, workflow_id: "nope" }), 404, "NOT_FOUND");
    for (const bad of [
      { batch_size: 0 },
      { batch_size: 1.5 },
      { batch_timeout_seconds: 0 },
      { batch_timeout_seconds: "2" },
    ]) {
      await expectError(await post({ ...base, ...bad }), 400, "INVALID_INPUT");
    }
    const admin = await api.request("/api/v1/event-triggers/register", {
      method: "POST",
      key: api.adminKey,
      projectId: "00000000-0000-4000-8000-000000000000",
      json: base,
    });
    await expectError(admin, 404, "NOT_FOUND"); // unknown project
    expect(await (await call("/api/v1/event-triggers")).json()).toEqual({ triggers: [], next_cursor: null });
  });

  it("creates (upserts per workflow and key), reads, pauses, edits and deletes schedules", async () => {
    const res = await call("/api/v1/schedules", {
      method: "POST",
      json: { workflow_id: "consumer", cron: "0 9 * * 1-5", timezone: "Europe/Berlin", input: { a: 1 } },
    });
    expect(res.status).toBe(201);
    const s = (await res.json()) as { schedule_id: string; next_run_at: string; key: string; status: string };
    expect(s).toMatchObject({ key: "global", status: "active", overlap_policy: "skip", input: { a: 1 } });
    const next = new Date(s.next_run_at);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(
      new Intl.DateTimeFormat("en-GB", {
        timeZone: "Europe/Berlin",
        hour: "2-digit",
        minute: "2-digit",
      }).format(next),
    ).toBe("09:00");

    const same = (await (
      await call("/api/v1/schedules", {
        method: "POST",
        json: { workflow_id: "consumer", cron: "*/5 * * * *" },
      })
    ).json()) as { schedule_id: string; cron: string };
    expect(same).toMatchObject({ schedule_id: s.schedule_id, cron: "*/5 * * * *" });
    const other = (await (
      await call("/api/v1/schedules", {
        method: "POST",
        json: { workflow_id: "consumer", cron: "0 0 * * *", key: "nightly" },
      })
    ).json()) as { schedule_id: string };
    expect(other.schedule_id).not.toBe(s.schedule_id);

    const paused = await call(`/api/v1/schedules/${s.schedule_id}`, {
      method: "PATCH",
      json: { status: "paused" },
    });
    expect(await paused.json()).toMatchObject({ status: "paused" });
    const page1 = (await (await call("/api/v1/schedules?limit=1")).json()) as {
      schedules: { id: string }[];
      next_cursor: string;
    };
    const page2 = (await (await call(`/api/v1/schedules?limit=1&cursor=${page1.next_cursor}`)).json()) as {
      schedules: { id: string }[];
      next_cursor: string | null;
    };
    expect([...page1.schedules, ...page2.schedules].map((x) => x.id)).toEqual([
      s.schedule_id,
      other.schedule_id,
    ]);
    expect(page2.next_cursor).toBeNull();
    expect(await (await call(`/api/v1/schedules/${other.schedule_id}`)).json()).toMatchObject({
      key: "nightly",
    });
    expect((await call(`/api/v1/schedules/${other.schedule_id}`, { method: "DELETE" })).status).toBe(204);
    await expectError(await call(`/api/v1/schedules/${other.schedule_id}`), 404, "NOT_FOUND");
  });

  it("400 for an invalid cron or timezone, 404 for an unknown workflow", async () => {
    const post = (json: unknown) => call("/api/v1/schedules", { method: "POST", json });
    for (const cron of ["* * * *", "0 0 0 * * *", "99 * * * *", "not a cron"]) {
      const body = await expectError(await post({ workflow_id: "consumer", cron }), 400, "INVALID_INPUT");
      expect(body.error).toContain("cron");
    }
    const tz = await expectError(
      await post({ workflow_id: "consumer", cron: "* * * * *", timezone: "Nowhere/City" }),
      400,
      "INVALID_INPUT",
    );
    expect(tz.error).toContain("timezone");
    await expectError(await post({ workflow_id: "ghost", cron: "* * * * *" }), 404, "NOT_FOUND");
    const created = (await (
      await post({ workflow_id: "consumer", cron: "* * * * *", key: "k2" })
    ).json()) as { id: string };
    await expectError(
      await call(`/api/v1/schedules/${created.id}`, { method: "PATCH", json: { cron: "nope" } }),
      400,
      "INVALID_INPUT",
    );
  });

  it("400 for a cron that never fires, on create and on PATCH", async () => {
    const never = await expectError(
      await call("/api/v1/schedules", {
        method: "POST",
        json: { workflow_id: "consumer", cron: "0 0 30 2 *", key: "never" },
      }),
      400,
      "INVALID_INPUT",
    );
    expect(never.error).toBe("cron '0 0 30 2 *' never fires: no date matches it");
    const { schedules } = (await (await call("/api/v1/schedules")).json()) as {
      schedules: { key: string }[];
    };
    expect(schedules.map((x) => x.key)).not.toContain("never");
    const created = (await (
      await call("/api/v1/schedules", {
        method: "POST",
        json: { workflow_id: "consumer", cron: "0 0 1 * *", key: "monthly" },
      })
    ).json()) as { id: string };
    await expectError(
      await call(`/api/v1/schedules/${created.id}`, { method: "PATCH", json: { cron: "0 0 31 4 *" } }),
      400,
      "INVALID_INPUT",
    );
  });

  it("posting an existing schedule again changes only the fields sent and keeps it paused", async () => {
    const post = (json: Record<string, unknown>) =>
      call("/api/v1/schedules", { method: "POST", json: { workflow_id: "consumer", key: "kept", ...json } });
    const created = (await (
      await post({
        cron: "0 9 * * *",
        timezone: "Asia/Tokyo",
        overlap_policy: "buffer_one",
        catchup_window_seconds: 300,
        input: { a: 1 },
      })
    ).json()) as { id: string; next_run_at: string };
    await call(`/api/v1/schedules/${created.id}`, { method: "PATCH", json: { status: "paused" } });
    const again = await post({ cron: "0 9 * * *", input: { a: 2 } });
    expect(again.status).toBe(201);
    expect(await again.json()).toMatchObject({
      id: created.id,
      status: "paused",
      timezone: "Asia/Tokyo",
      overlap_policy: "buffer_one",
      catchup_window_seconds: 300,
      input: { a: 2 },
      next_run_at: created.next_run_at,
    });
  });
});
