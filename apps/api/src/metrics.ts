import type { PrismaClient } from "@spool/db";
import { registerStateGauges } from "@spool/engine";
import { Gauge, Histogram, type Registry } from "prom-client";

/** The API's own metrics: its HTTP requests and open event streams, and the Postgres-read gauges. */
export interface ApiMetrics {
  registry: Registry;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  streamOpened(): void;
  streamClosed(): void;
}

export function createApiMetrics(registry: Registry, prisma: PrismaClient): ApiMetrics {
  const requests = new Histogram({
    name: "spool_http_request_duration_seconds",
    help: "HTTP requests by route (as declared, not the concrete path), method and status",
    labelNames: ["method", "route", "status"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, 120],
    registers: [registry],
  });
  const streams = new Gauge({
    name: "spool_sse_connections",
    help: "Event streams (Server-Sent Events) open on this API process",
    registers: [registry],
  });
  registerStateGauges(registry, prisma);
  return {
    registry,
    observeRequest: (method, route, status, seconds) =>
      requests.observe({ method, route, status: String(status) }, seconds),
    streamOpened: () => streams.inc(),
    streamClosed: () => streams.dec(),
  };
}
