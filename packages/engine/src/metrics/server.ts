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
 * Node's own metrics (CPU, memory, GC, event-loop lag) on `registry`. The event-loop delay is
 * sampled every 100 ms, not prom-client's 10 ms: its timer woke every process a hundred times a
 * second, about half of an idle API's CPU on the 2-core VM; stalls of 100 ms or more are still
 * always seen, shorter ones by chance.
 */
export function collectRuntimeMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
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
  collectRuntimeMetrics(registry);
  return {
    metrics: createPrometheusMetrics(registry),
    server: serveMetrics(registry, { port: o.port, host: o.host, logger: o.logger }),
  };
}
