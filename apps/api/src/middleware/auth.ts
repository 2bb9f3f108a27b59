import type { Principal } from "@spool/engine";
import { badRequest, forbidden, notFound, unauthorized } from "@spool/shared";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { ApiEnv } from "../context.js";
import { scopeAllows } from "./scopes.js";

export const AUTH_COOKIE = "service_auth";

/** The key a request presents: a bearer token, else the session cookie (`fromCookie`). */
function presentedKey(
  authorization: string | undefined,
  cookie: string | undefined,
): { key: string; fromCookie: boolean } | undefined {
  const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (bearer) return { key: bearer, fromCookie: false };
  return cookie ? { key: cookie, fromCookie: true } : undefined;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * 401 unless the request carries a known, unrevoked key (bearer header or service_auth cookie). A
 * write the cookie authenticates must also carry X-Project-ID: a browser sends the cookie with a
 * cross-site form, but no cross-site page can add a header without the API's consent (CSRF). (An
 * Authorization header that is not a bearer token does not count: the cookie still decides.)
 */
export const authenticate = createMiddleware<ApiEnv>(async (c, next) => {
  const presented = presentedKey(c.req.header("authorization"), getCookie(c, AUTH_COOKIE));
  if (!presented) throw unauthorized("missing credentials: send Authorization: Bearer <api key>");
  if (presented.fromCookie && !SAFE_METHODS.has(c.req.method) && !headerProjectId((n) => c.req.header(n))) {
    throw forbidden("a write with the session cookie must carry the X-Project-ID header");
  }
  const principal = await c.get("engine").projects.authenticate(presented.key);
  if (!principal) throw unauthorized("invalid or revoked API key");
  c.set("principal", principal);
  await next();
});

const headerProjectId = (header: (name: string) => string | undefined) =>
  header("x-project-id") ?? header("project-id");

/**
 * Project-scoped routes: X-Project-ID (alias Project-ID) is required and must be the key's own
 * project (403 otherwise); the admin key may name any existing project (404 when unknown).
 */
export const requireProject = createMiddleware<ApiEnv>(async (c, next) => {
  const projectId = headerProjectId((n) => c.req.header(n))?.trim();
  if (!projectId) throw badRequest("missing X-Project-ID header");
  await assertProjectAccess(c.get("principal"), projectId, (id) => c.get("engine").projects.exists(id));
  const principal = c.get("principal");
  if (principal.kind === "project" && !scopeAllows(principal.scope, c.req.method, c.req.path)) {
    throw forbidden(`a key with scope '${principal.scope}' may not call ${c.req.method} ${c.req.path}`);
  }
  c.set("projectId", projectId);
  await next();
});

/** Routes under /projects/{project_id}: a project key may only touch its own project. */
export async function assertProjectAccess(
  principal: Principal,
  projectId: string,
  exists: (id: string) => Promise<boolean>,
): Promise<void> {
  if (principal.kind === "project") {
    if (principal.projectId !== projectId) throw forbidden("this API key belongs to another project");
    return;
  }
  if (!(await exists(projectId))) throw notFound("project", projectId);
}

/** A project key that names another project in X-Project-ID is refused even on /projects routes. */
export const checkOptionalProjectHeader = createMiddleware<ApiEnv>(async (c, next) => {
  const projectId = headerProjectId((n) => c.req.header(n))?.trim();
  const principal = c.get("principal");
  if (projectId && principal.kind === "project" && principal.projectId !== projectId) {
    throw forbidden("this API key belongs to another project");
  }
  await next();
});

export const requireAdmin = (principal: Principal): void => {
  if (principal.kind !== "admin") throw forbidden("this operation needs the admin key");
};

/** Keys are managed with the admin key or a key of scope `admin` (a leaked key must not outlive its revocation). */
export const requireKeyManager = (principal: Principal): void => {
  if (principal.kind === "project" && principal.scope !== "admin") {
    throw forbidden("managing API keys needs the admin key or a key with scope 'admin'");
  }
};

/** assertProjectAccess for a request's own principal. */
export const checkProjectAccess = (c: Context<ApiEnv>, projectId: string) =>
  assertProjectAccess(c.get("principal"), projectId, (id) => c.get("engine").projects.exists(id));
