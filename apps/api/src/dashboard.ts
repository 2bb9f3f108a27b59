import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import type { App } from "./context.js";

/** Where `npm run build:dashboard` writes the dashboard (apps/dashboard/dist). */
export const DASHBOARD_DIST = fileURLToPath(new URL("../../dashboard/dist", import.meta.url));

/**
 * The page may talk to this server only, load nothing from elsewhere and be framed by no one:
 * everything it needs is bundled (no CDN), and its forms submit here.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
  "base-uri 'self'",
].join("; ");

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Spool</title></head>
<body><h1>Spool</h1><p>The dashboard is not built. Run <code>npm run build:dashboard</code>
(<code>npm run dev</code> does it for you), then reload. The API is at <a href="/api/v1/docs">/api/v1/docs</a>.</p></body></html>`;

/** Paths that are the API's, never the dashboard's (an unknown one there is a JSON 404). */
const isApiPath = (path: string) =>
  path.startsWith("/api/") || path.startsWith("/internal/") || path === "/health" || path === "/api";

/**
 * Serves the dashboard at `/` on the API's own port: its built files, and its index page for any
 * other GET (the app routes in the browser: /runs/<id> and so on).
 */
export function registerDashboard(app: App, distDir: string = DASHBOARD_DIST) {
  const root = relative(process.cwd(), distDir) || ".";
  const indexPath = join(distDir, "index.html");
  app.use("/assets/*", async (c, next) => {
    await next();
    // File names carry their content hash: they never change.
    if (c.res.ok) c.header("Cache-Control", "public, max-age=31536000, immutable");
  });
  app.use("/assets/*", serveStatic({ root }));
  app.get("*", async (c, next) => {
    if (isApiPath(c.req.path)) return next();
    c.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "no-referrer");
    if (!existsSync(indexPath)) return c.html(NOT_BUILT, 503);
    c.header("Cache-Control", "no-cache");
    return c.html(await readFile(indexPath, "utf8"));
  });
}
