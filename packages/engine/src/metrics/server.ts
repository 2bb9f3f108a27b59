import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "@spool/shared";
import { collectDefaultMetrics, Registry } from "prom-client";
import { createPrometheusMetrics, type EngineMetrics } from "./metrics.js";

/**
 * `GET /metrics` of a worker or scheduler process, on a port of its own (they serve no HTTP
 * otherwise). Bound to 127.0.0.1 unless told otherwise: it has no authentication.
 */
export function serveMetrics(registry: Registry, o: { port: number; host: string; logger: Logger }): Server {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
      res
        .writeHead(404, { "content-type": "application/json" })
        .end('{"error":"not found","error_type":"NOT_FOUND"}');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
      (err: unknown) => {
        o.logger.warn({ err: String(err) }, "metrics not collected");
        res
          .writeHead(503, { "content-type": "application/json" })
          .end('{"error":"metrics unavailable","error_type":"SERVICE_UNAVAILABLE"}');
      },
    );
  });
  // Port 0: one the OS picks, which the log line names.
  server.listen(o.port, o.host, () =>
    o.logger.info({ port: (server.address() as AddressInfo).port, host: o.host }, "metrics listening"),
  );
  return server;
}

/**
 * A worker's or scheduler's metrics: counted on a registry of its own and served on
 * `SPOOL_METRICS_PORT` when it is set (nothing is counted otherwise). Close the server on shutdown.
 */
export function processMetrics(o: { port?: number; host: string; logger: Logger }): {
  metrics?: EngineMetrics;
  server?: Server;
} {
  if (o.port === undefined) return {};
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    metrics: createPrometheusMetrics(registry),
    server: serveMetrics(registry, { port: o.port, host: o.host, logger: o.logger }),
  };
}
