import { describe, expect, it } from "vitest";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();
const admin = api.adminKey;

describe("projects", () => {
  it("the admin key creates a project; it is read back", async () => {
    const res = await api.request("/api/v1/projects", {
      method: "POST",
      key: admin,
      json: { name: "acme", description: "prod" },
    });
    expect(res.status).toBe(201);
    const project = (await res.json()) as Record<string, string>;
    expect(project).toMatchObject({ name: "acme", description: "prod" });
    expect(project.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(project.created_at!).toISOString()).toBe(project.created_at);

    const got = await api.request(`/api/v1/projects/${project.id}`, { key: admin });
    expect(await got.json()).toEqual(project);
  });

  it("only the admin key creates projects; a bad body changes nothing", async () => {
    const { key } = await api.createProject();
    await expectError(
      await api.request("/api/v1/projects", { method: "POST", key, json: { name: "x" } }),
      403,
      "FORBIDDEN",
    );
    await expectError(
      await api.request("/api/v1/projects", { method: "POST", json: { name: "x" } }),
      401,
      "UNAUTHORIZED",
    );
    // Counted by the refused name: other test files create projects meanwhile.
    const unnamed = () => api.engine.prisma.project.count({ where: { name: "" } });
    const before = await unnamed();
    const bad = await expectError(
      await api.request("/api/v1/projects", {
        method: "POST",
        key: admin,
        json: { name: "", description: 5 },
      }),
      400,
      "INVALID_INPUT",
    );
    expect(JSON.stringify(bad.details)).toContain("name");
    expect(JSON.stringify(bad.details)).toContain("description");
    expect(await unnamed()).toBe(before);
  });

  it("lists every project for the admin key and only its own for a project key, with cursor paging", async () => {
    const mine = await api.createProject("mine");
    await api.createProject("other");
    const own = (await (await api.request("/api/v1/projects", { key: mine.key })).json()) as {
      projects: { id: string }[];
    };
    expect(own.projects.map((p) => p.id)).toEqual([mine.projectId]);

    // Projects other test files create meanwhile may or may not be seen; these must be.
    const existing = (await api.engine.prisma.project.findMany({ select: { id: true } })).map((p) => p.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : "";
      const page = (await (await api.request(`/api/v1/projects?limit=2${q}`, { key: admin })).json()) as {
        projects: { id: string }[];
        next_cursor: string | null;
      };
      expect(page.projects.length).toBeLessThanOrEqual(2);
      seen.push(...page.projects.map((p) => p.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(existing.filter((id) => !seen.includes(id))).toEqual([]);
  });

  it("a project key cannot read another project (403), the admin gets 404 for an unknown one", async () => {
    const a = await api.createProject();
    const b = await api.createProject();
    await expectError(await api.request(`/api/v1/projects/${b.projectId}`, { key: a.key }), 403, "FORBIDDEN");
    await expectError(
      await api.request(`/api/v1/projects/${b.projectId}/api-keys`, { key: a.key }),
      403,
      "FORBIDDEN",
    );
    await expectError(
      await api.request(`/api/v1/projects/${a.projectId}`, { key: a.key, projectId: b.projectId }),
      403,
      "FORBIDDEN",
    );
    await expectError(
      await api.request("/api/v1/projects/00000000-0000-4000-8000-000000000000", { key: admin }),
      404,
      "NOT_FOUND",
    );
    await expectError(await api.request("/api/v1/projects/nope", { key: admin }), 404, "NOT_FOUND");
  });
});

describe("api keys", () => {
  it("are shown once, listed without the secret, and stop working at once when revoked", async () => {
    const { projectId } = await api.createProject();
    // A key of scope admin manages its own project's keys.
    const ops = (await (
      await api.request(`/api/v1/projects/${projectId}/api-keys`, {
        method: "POST",
        key: admin,
        json: { name: "ops", scope: "admin" },
      })
    ).json()) as { key: string; scope: string };
    expect(ops.scope).toBe("admin");
    const firstKey = ops.key;
    const created = await api.request(`/api/v1/projects/${projectId}/api-keys`, {
      method: "POST",
      key: firstKey,
      json: { name: "ci", scope: "admin" },
    });
    expect(created.status).toBe(201);
    const k = (await created.json()) as { id: string; key: string; last_four: string; name: string };
    expect(k.key).toMatch(/^sk_[A-Za-z0-9]{40}$/);
    expect(k.last_four).toBe(k.key.slice(-4));

    const stored = await api.engine.prisma.apiKey.findUniqueOrThrow({ where: { id: k.id } });
    expect(stored.keyHash).not.toContain(k.key);
    expect(JSON.stringify(stored)).not.toContain(k.key);

    const listed = await api.request(`/api/v1/projects/${projectId}/api-keys`, { key: k.key });
    const body = (await listed.json()) as { api_keys: Record<string, unknown>[] };
    expect(body.api_keys).toHaveLength(3);
    expect(JSON.stringify(body)).not.toContain(k.key);
    const ci = body.api_keys.find((x) => x.id === k.id)!;
    expect(ci).toMatchObject({ name: "ci", scope: "admin", last_four: k.last_four, revoked_at: null });
    expect(ci.last_used_at).not.toBeNull(); // it was just used to list

    const del = await api.request(`/api/v1/projects/${projectId}/api-keys/${k.id}`, {
      method: "DELETE",
      key: firstKey,
    });
    expect(del.status).toBe(204);
    await expectError(
      await api.request(`/api/v1/projects/${projectId}`, { key: k.key }),
      401,
      "UNAUTHORIZED",
    );
    const after = (await (
      await api.request(`/api/v1/projects/${projectId}/api-keys`, { key: firstKey })
    ).json()) as {
      api_keys: { id: string; revoked_at: string | null }[];
    };
    expect(after.api_keys.find((x) => x.id === k.id)?.revoked_at).not.toBeNull();
  });

  it("404 for an unknown key or another project's key", async () => {
    const a = await api.createProject();
    const b = await api.createProject();
    const keyOfB = (await api.engine.prisma.apiKey.findFirstOrThrow({ where: { projectId: b.projectId } }))
      .id;
    await expectError(
      await api.request(`/api/v1/projects/${a.projectId}/api-keys/${keyOfB}`, {
        method: "DELETE",
        key: admin,
      }),
      404,
      "NOT_FOUND",
    );
    await expectError(
      await api.request(`/api/v1/projects/${a.projectId}/api-keys/garbage`, { method: "DELETE", key: admin }),
      404,
      "NOT_FOUND",
    );
    // b's key still works
    expect((await api.request(`/api/v1/projects/${b.projectId}`, { key: b.key })).status).toBe(200);
  });

  it("the cookie works like the bearer header", async () => {
    const { projectId, key } = await api.createProject();
    const res = await api.request(`/api/v1/projects/${projectId}`, {
      headers: { cookie: `service_auth=${key}` },
    });
    expect(res.status).toBe(200);
  });
});
