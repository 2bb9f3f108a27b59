/**
 * Is this error "Postgres or Redis is unavailable" rather than a bug? The API answers those with
 * 503 + Retry-After and logs them briefly; everything else stays a logged 500.
 *
 * Most shapes below were produced by the real drivers (pg 8, Prisma 7 over @prisma/adapter-pg,
 * ioredis 6, the engine's dispatcher) against a closed port, a server that accepts and hangs up, a
 * silent server, an exhausted pool, a terminated backend and a role over its connection limit; see
 * apps/api/test/unavailable.test.ts. The rest (57P02/57P03, other class-08 states, the unreachable
 * and DNS socket codes, Redis LOADING, ioredis' command timeout) follow the drivers' documented
 * codes and messages. Recognition goes by code where the driver gives one and by exact message only
 * where it gives nothing else.
 */

/** Socket failures of a connection this process opens (pg, ioredis). */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  // DNS: the service name does not resolve (a restarting service in Kubernetes, a DNS outage).
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs: 57P01-03 admin/crash shutdown and "cannot connect now" (starting up, in recovery),
 * 53300 too many connections. Class 08 (connection exception) is checked apart.
 */
const SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

/**
 * Prisma's codes for an unreachable or overloaded database: can't reach (P1001), timed out (P1002,
 * P1008), connection closed (P1017), pool timeout (P2024, Prisma's own engine), too many connections
 * (P2037). P2010 / P2039 (raw query / unmapped database error) are judged by the driver error inside.
 */
const PRISMA_CODES = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2037"]);

/** @prisma/adapter-pg's kinds for the same failures (meta.driverAdapterError.cause.kind). */
const ADAPTER_KINDS = new Set([
  "DatabaseNotReachable",
  "SocketTimeout",
  "ConnectionClosed",
  "TooManyConnections",
]);

/** Messages of errors that carry no code. */
const MESSAGES = [
  // pg: server gone mid-session, connect timeout (connectionTimeoutMillis), pool exhausted past it.
  /^Connection terminated( unexpectedly| due to connection timeout)?$/,
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
  // ioredis: connection ended, offline queue disabled, per-command timeout; Redis restarting.
  /^Connection is closed\.$/,
  /^Stream isn't writeable and enableOfflineQueue options is false$/,
  /^Command timed out$/,
  /^LOADING /,
  // The engine's bound on a BullMQ enqueue (packages/engine/src/dispatch/dispatcher.ts).
  /^enqueue timed out after \d+ ms$/,
];

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  errorCode?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
  meta?: { driverAdapterError?: { cause?: unknown } };
  kind?: unknown;
  originalCode?: unknown;
}

const isSqlState = (code: unknown): code is string => typeof code === "string" && /^[0-9A-Z]{5}$/.test(code);

/**
 * A connection-exception SQLSTATE. 08P01 (protocol violation) is left out: a malformed query (wrong
 * number of bind parameters) raises it too, and that is a bug.
 */
const isUnavailableSqlState = (code: unknown) =>
  isSqlState(code) && (SQLSTATES.has(code) || (code.startsWith("08") && code !== "08P01"));

/** The one error object itself, without looking inside it. */
function matchesItself(e: ErrorLike): boolean {
  if (e.name === "MaxRetriesPerRequestError") return true;
  if (typeof e.code === "string") {
    if (SOCKET_CODES.has(e.code)) return true;
    if (PRISMA_CODES.has(e.code)) return true;
    // No pooled connection within an interactive transaction's maxWait; P2028's other causes (a
    // transaction that outran its own timeout) are not an outage.
    if (e.code === "P2028" && /Unable to start a transaction in the given time/.test(String(e.message))) {
      return true;
    }
    if (isUnavailableSqlState(e.code)) return true;
  }
  if (typeof e.errorCode === "string" && PRISMA_CODES.has(e.errorCode)) return true;
  // A driver adapter's mapped error (a plain object with a kind).
  if (typeof e.kind === "string" && ADAPTER_KINDS.has(e.kind)) return true;
  if (isUnavailableSqlState(e.originalCode)) return true;
  return typeof e.message === "string" && MESSAGES.some((m) => m.test(e.message as string));
}

/**
 * True when `err`, or an error it wraps (`cause`, AggregateError's `errors`, Prisma's
 * `meta.driverAdapterError`), says Postgres or Redis cannot be reached, dropped the connection,
 * is shutting down or starting, or has no connection to give.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  // Bounded: a cyclic or very deep chain is not worth walking.
  while (queue.length > 0 && seen.size < 16) {
    const e = queue.shift();
    if (e === null || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const candidate = e as ErrorLike;
    if (matchesItself(candidate)) return true;
    queue.push(candidate.cause, candidate.meta?.driverAdapterError?.cause);
    if (Array.isArray(candidate.errors)) queue.push(...candidate.errors);
  }
  return false;
}
