// Signing in to the dashboard: the key becomes an HttpOnly, SameSite=Strict cookie; a write that
// only the cookie authenticates must carry X-Project-ID (CSRF); the dashboard is served at /.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "@spool/shared";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";
import { createTestApi, expectError } from "./harness.js";

const api = createTestApi();

const cookieOf = (res: Response) => res.headers.get("set-cookie") ?? "";

describe("dashboard session", () => {
  it("signs in with a key: an HttpOnly, SameSite=Strict cookie that authenticates reads; out clears it", async () => {
    const p = await api.createProject();
    await expectError(
      await api.request("/api/v1/session", { method: "POST", json: { api_key: "sk_nope" } }),
      401,
      "UNAUTHORIZED",
    );

    const signedIn = await api.request("/api/v1/session", { method: "POST", json: { api_key: p.key } });
    expect(signedIn.status).toBe(200);
    expect(await signedIn.json()).toEqual({ kind: "project", project_id: p.projectId, scope: null });
    const cookie = cookieOf(signedIn);
    expect(cookie).toMatch(/^service_auth=sk_[^;]+; Max-Age=43200; Path=\/; HttpOnly; SameSite=Strict$/);
    const session = cookie.split(";")[0]!;

    const who = await api.request("/api/v1/session", { headers: { cookie: session } });
    expect(await who.json()).toEqual({ kind: "project", project_id: p.projectId, scope: null });
    const runs = await api.request("/api/v1/executions", {
      headers: { cookie: session, "x-project-id": p.projectId },
    });
    expect(runs.status).toBe(200);

    const out = await api.request("/api/v1/session", { method: "DELETE" });
    expect(out.status).toBe(204);
    expect(cookieOf(out)).toMatch(/^service_auth=; Max-Age=0; Path=\//);
  });

  it("over HTTPS (a proxy saying so) the cookie is Secure; the admin key signs in too", async () => {
    const res = await api.request("/api/v1/session", {
      method: "POST",
      json: { api_key: api.adminKey },
      headers: { "x-forwarded-proto": "https" },
    });
    expect(await res.json()).toEqual({ kind: "admin", project_id: null, scope: null });
    expect(cookieOf(res)).toContain("; Secure");
  });

  it("a write the cookie alone authenticates needs X-Project-ID (a cross-site form cannot send it)", async () => {
    const p = await api.createProject();
    const session = cookieOf(
      await api.request("/api/v1/session", { method: "POST", json: { api_key: p.key } }),
    ).split(";")[0]!;
    const forged = await api.request("/api/v1/workflows/w/run", {
      method: "POST",
      json: { input: {} },
      headers: { cookie: session },
    });
    const body = await expectError(forged, 403, "FORBIDDEN");
    expect(body.error).toContain("X-Project-ID");
    // An Authorization header that is no bearer token leaves the cookie in charge: still refused.
    const disguised = await api.request("/api/v1/workflows/w/run", {
      method: "POST",
      json: { input: {} },
      headers: { cookie: session, authorization: "Basic Zm9vOmJhcg==" },
    });
    await expectError(disguised, 403, "FORBIDDEN");
    // The dashboard's own request carries the header: it gets through to the route (no such workflow).
    await expectError(
      await api.request("/api/v1/workflows/w/run", {
        method: "POST",
        json: { input: {} },
        headers: { cookie: session, "x-project-id": p.projectId },
      }),
      404,
      "NOT_FOUND",
    );
  });
});

describe("the dashboard at /", () => {
  const dist = mkdtempSync(join(tmpdir(), "spool-dashboard-"));
  afterAll(() => rmSync(dist, { recursive: true, force: true }));
  const appOf = (dashboardDist: string) =>
    createApp({
      engine: api.engine,
      eventHub: { subscribe: async () => () => {}, close: async () => {} } as never,
      logger: createLogger("test", "silent"),
      dashboardDist,
    });

  it("serves its page for the app's paths, its assets, and JSON 404s for unknown API paths", async () => {
    mkdirSync(join(dist, "assets"));
    writeFileSync(join(dist, "index.html"), "<!doctype html><title>Spool</title><div id=root></div>");
    writeFileSync(join(dist, "assets", "app-abc123.js"), "console.log(1)");
    const app = appOf(dist);
    for (const path of ["/", "/runs", "/runs/4f0c"]) {
      const page = await app.request(path);
      expect(page.status, path).toBe(200);
      expect(await page.text()).toContain("<div id=root>");
      expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    }
    const asset = await app.request("/assets/app-abc123.js");
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    await expectError(await app.request("/api/v1/nothing"), 401, "UNAUTHORIZED");
    await expectError(await app.request("/api/nothing"), 404, "NOT_FOUND");
  });

  it("says how to build it when it is not built", async () => {
    const page = await appOf(join(dist, "missing")).request("/");
    expect(page.status).toBe(503);
    expect(await page.text()).toContain("npm run build:dashboard");
  });
});
