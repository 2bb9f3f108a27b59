import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import type { App } from "./context.js";

/** What Node itself answers a request it cannot parse (before the app sees it), as the contract's JSON. */
const PARSE_ERRORS: Record<string, { status: number; reason: string; type: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: "Request Header Fields Too Large",
    type: "BAD_REQUEST",
    message: "request headers are too large",
  },
};

function rawJsonResponse(status: number, reason: string, body: unknown): string {
  const json = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  );
}

/**
 * Serves the app on Node's HTTP server. A request Node rejects while parsing (e.g. headers over its
 * limit) gets the contract's JSON error body instead of Node's bare status line.
 */
export function listen(app: App, o: { port: number; hostname: string }, onListening: (port: number) => void) {
  const server = serve({ fetch: app.fetch, port: o.port, hostname: o.hostname }, (info) =>
    onListening(info.port),
  ) as Server;
  server.on("clientError", (err: Error & { code?: string }, socket) => {
    const known = err.code ? PARSE_ERRORS[err.code] : undefined;
    if (socket.writable && known) {
      socket.end(
        rawJsonResponse(known.status, known.reason, { error: known.message, error_type: known.type }),
      );
    } else if (socket.writable && err.code !== "ECONNRESET") {
      socket.end(
        rawJsonResponse(400, "Bad Request", { error: "malformed HTTP request", error_type: "BAD_REQUEST" }),
      );
    } else {
      socket.destroy();
    }
  });
  return server;
}
