import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { App } from "./context.js";

// Swagger UI served from the installed swagger-ui-dist package, so the docs page works offline.
const require = createRequire(import.meta.url);
const assetsDir = dirname(require.resolve("swagger-ui-dist/package.json"));
const ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

const page = (specUrl: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Spool API</title>
  <link rel="stylesheet" href="/api/v1/docs/assets/swagger-ui.css" />
  <link rel="icon" type="image/png" href="/api/v1/docs/assets/favicon-32x32.png" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/v1/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/api/v1/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: ${JSON.stringify(specUrl)},
      dom_id: "#swagger-ui",
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "StandaloneLayout",
      persistAuthorization: true,
      // The default sends the spec's URL to validator.swagger.io for a badge: no outside hosts.
      validatorUrl: null,
    });
  </script>
</body>
</html>`;

/**
 * The browser enforces what the page promises: it fetches, loads images and fonts, and submits only to
 * this server (data: URLs are the icons inlined in swagger-ui.css). Scripts and styles are left alone:
 * the page's own are local, and Swagger UI sets inline styles.
 */
const CONTENT_SECURITY_POLICY = [
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "media-src 'none'",
  "object-src 'none'",
  "frame-src 'none'",
  "form-action 'self'",
  "base-uri 'self'",
].join("; ");

export function registerDocs(app: App) {
  app.get("/api/v1/docs", (c) =>
    c.html(page("/api/v1/openapi.json"), 200, { "content-security-policy": CONTENT_SECURITY_POLICY }),
  );
  app.get("/api/v1/docs/assets/:file", async (c) => {
    const file = c.req.param("file");
    const type = ASSETS[file];
    if (!type) return c.notFound();
    const body = await readFile(join(assetsDir, file));
    return c.body(body, 200, { "content-type": type, "cache-control": "public, max-age=86400" });
  });
}
