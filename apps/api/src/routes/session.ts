// The dashboard's sign-in: an API key exchanged for the HttpOnly `service_auth` cookie the API
// already accepts. Who is signed in is read back; signing out clears the cookie.
import { createRoute } from "@hono/zod-openapi";
import type { Principal } from "@spool/engine";
import { CreateSessionBody, SessionResponse, unauthorized } from "@spool/shared";
import type { Context } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { ApiEnv, App } from "../context.js";
import { errorResponses } from "../errors.js";
import { AUTH_COOKIE } from "../middleware/auth.js";
import { AUTHENTICATED, json, jsonBody } from "../openapi.js";

/** How long a dashboard session lasts without signing in again. */
const SESSION_SECONDS = 12 * 60 * 60;

const tags = ["Session"];

const createSession = createRoute({
  method: "post",
  path: "/api/v1/session",
  tags,
  summary: "Sign in: the key is checked and set as the HttpOnly, SameSite=Strict `service_auth` cookie",
  description:
    "Secure over HTTPS (or behind a proxy that says X-Forwarded-Proto: https). A request that the cookie " +
    "authenticates and that writes anything must also carry X-Project-ID, which a cross-site form cannot send.",
  security: [],
  request: { body: jsonBody(CreateSessionBody) },
  responses: { 200: json(SessionResponse, "Signed in"), ...errorResponses(400, 401, 413, 415) },
});

const getSession = createRoute({
  method: "get",
  path: "/api/v1/session",
  tags,
  summary: "Who the cookie (or bearer key) is",
  security: AUTHENTICATED,
  responses: { 200: json(SessionResponse, "The session"), ...errorResponses(401) },
});

const deleteSession = createRoute({
  method: "delete",
  path: "/api/v1/session",
  tags,
  summary: "Sign out: clears the cookie",
  security: [],
  responses: { 204: { description: "Signed out" } },
});

const presentSession = (p: Principal) =>
  p.kind === "admin"
    ? { kind: "admin" as const, project_id: null, scope: null }
    : { kind: "project" as const, project_id: p.projectId, scope: p.scope };

/** Whether the browser reached us over HTTPS (directly, or through a proxy that says so). */
const overHttps = (c: Context<ApiEnv>) =>
  new URL(c.req.url).protocol === "https:" ||
  c.req.header("x-forwarded-proto")?.split(",")[0]?.trim() === "https";

export function registerSession(app: App) {
  app.openapi(createSession, async (c) => {
    const principal = await c.get("engine").projects.authenticate(c.req.valid("json").api_key);
    if (!principal) throw unauthorized("invalid or revoked API key");
    setCookie(c, AUTH_COOKIE, c.req.valid("json").api_key, {
      httpOnly: true,
      sameSite: "Strict",
      secure: overHttps(c),
      path: "/",
      maxAge: SESSION_SECONDS,
    });
    return c.json(presentSession(principal), 200);
  });

  app.openapi(getSession, (c) => c.json(presentSession(c.get("principal")), 200));

  app.openapi(deleteSession, (c) => {
    deleteCookie(c, AUTH_COOKIE, { path: "/", httpOnly: true, sameSite: "Strict", secure: overHttps(c) });
    return c.body(null, 204);
  });
}
