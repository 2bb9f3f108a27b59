import { z } from "@hono/zod-openapi";
import { isDependencyUnavailable } from "@spool/engine";
import { type ErrorBody, ErrorResponse, type Logger, SpoolError } from "@spool/shared";
import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode, UnofficialStatusCode } from "hono/utils/http-status";
import type { ApiEnv } from "./context.js";

/**
 * Retry-After of a 503. Short on purpose: the pg pool opens a fresh connection for the next query
 * and ioredis reconnects at most 2 s apart, so a request retried 2 s later succeeds as soon as the
 * dependency is back; a client seeing 503 again should back off further on its own. Every outage
 * request fails fast (a refused or reset connection), so a short delay costs the API little.
 */
export const RETRY_AFTER_SECONDS = 2;

/** The one JSON error writer: every 4xx/5xx of the API goes through here. */
export function errorJson(c: Context, err: SpoolError) {
  if (err.status === 503) c.header("Retry-After", String(RETRY_AFTER_SECONDS));
  return c.json(err.toBody(), err.status as ContentfulStatusCode);
}

/**
 * The client went away: Node's "aborted" on a request whose body was still arriving, a stream
 * closed early, or an abort of the request's own signal. Nobody reads the answer; not a failure.
 */
export function isClientGone(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted && err === signal.reason) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (code === "ECONNRESET" && err.message === "aborted") return true;
  if (code === "ERR_STREAM_PREMATURE_CLOSE") return true;
  return signal?.aborted === true && err.name === "AbortError";
}

/** One line for a 503's log: Prisma puts a code excerpt before the driver's message; keep the message. */
function briefMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const lines = err.message.split("\n").filter((l) => l.trim() !== "");
  const code = (err as { code?: unknown }).code;
  const message = lines.at(-1)?.trim() ?? err.name;
  return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
}

export type Failure = "client_gone" | "unavailable" | "bug";

/**
 * What an unexpected error means, logged at the level it deserves: a client leaving at debug, a
 * dependency outage at warn with its message only (it repeats on every request of an outage; the
 * stack says nothing), anything else at error with its stack.
 */
export function logFailure(
  logger: Logger | undefined,
  err: unknown,
  context: Record<string, unknown>,
  signal?: AbortSignal,
): Failure {
  if (isClientGone(err, signal)) {
    logger?.debug({ ...context, err: briefMessage(err) }, "client closed the request");
    return "client_gone";
  }
  if (isDependencyUnavailable(err)) {
    logger?.warn({ ...context, err: briefMessage(err) }, "dependency unavailable");
    return "unavailable";
  }
  logger?.error({ ...context, err }, "unhandled error");
  return "bug";
}

/** The 503 body: names no host, port or driver detail (the log has them). */
export const unavailable = () =>
  new SpoolError(
    "SERVICE_UNAVAILABLE",
    "service temporarily unavailable: the database or queue cannot be reached; retry after Retry-After seconds",
  );

const HTTP_EXCEPTION_TYPES: Record<number, ErrorBody["error_type"]> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "RATE_LIMITED",
  503: "SERVICE_UNAVAILABLE",
};

/**
 * What a thrown error answers, in the contract's terms. Domain errors carry their own type; Hono's
 * HTTPExceptions (malformed JSON, body limit) are mapped by status; Postgres or Redis unavailable is
 * a 503; anything else is a bug: logged with its stack, answered as a bare 500 without internals.
 * Null: the client left (nobody reads the answer).
 */
export function answerFor(err: unknown, c: Context<ApiEnv>): SpoolError | null {
  if (err instanceof SpoolError) return err;
  if (err instanceof HTTPException && err.status < 500) {
    const type = HTTP_EXCEPTION_TYPES[err.status] ?? "BAD_REQUEST";
    const message =
      err.status === 400 && /JSON/i.test(err.message) ? "malformed JSON in request body" : err.message;
    return new SpoolError(type, message || type.toLowerCase());
  }
  const failure = logFailure(
    c.get("logger"),
    err,
    { path: c.req.path, method: c.req.method },
    c.req.raw.signal,
  );
  if (failure === "client_gone") return null;
  if (failure === "unavailable") return unavailable();
  return new SpoolError("INTERNAL_ERROR", "internal error");
}

/** Thrown errors become the contract's error body (answerFor); a client that left gets nothing (499 in the request log). */
export const onError: ErrorHandler<ApiEnv> = (err, c) => {
  const answer = answerFor(err, c);
  return answer ? errorJson(c, answer) : c.body(null, 499 as UnofficialStatusCode);
};

/** zod validation failures: 400 INVALID_INPUT naming each offending field. */
export function validationHook(
  result: { success: true } | { success: false; error: z.ZodError; target?: string },
  c: Context,
) {
  if (result.success) return undefined;
  const details = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join(".") || result.target || "(root)",
    message: issue.message,
    code: issue.code,
    ...(result.target ? { in: result.target } : {}),
  }));
  const fields = [...new Set(details.map((d) => d.path))].join(", ");
  return errorJson(
    c,
    new SpoolError("INVALID_INPUT", `invalid ${result.target ?? "input"}: ${fields}`, details),
  );
}

const DESCRIPTIONS: Record<number, string> = {
  400: "Malformed JSON, invalid input (details names the fields) or missing X-Project-ID",
  401: "Missing, unknown or revoked credentials",
  403: "The key's project differs from X-Project-ID, or the operation needs the admin key",
  404: "Not found (also for another project's resources)",
  409: "Conflict with the resource's current state",
  413: "Request body over the size limit",
  415: "Request body is not application/json",
  503:
    "Postgres or Redis is unavailable (unreachable, connection lost, no free connection); " +
    "retry after the Retry-After header's seconds",
};

const RetryAfterHeaders = z.object({
  "Retry-After": z.string().openapi({
    description: "Seconds to wait before retrying",
    example: String(RETRY_AFTER_SECONDS),
  }),
});

/**
 * OpenAPI error responses for a route, all sharing the ErrorResponse schema. 503 is always among
 * them: any route that reads or writes Postgres or Redis answers it during an outage.
 */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(
    [...new Set([...statuses, 503])].map((s) => [
      s,
      {
        description: DESCRIPTIONS[s] ?? "Error",
        ...(s === 503 ? { headers: RetryAfterHeaders } : {}),
        content: { "application/json": { schema: ErrorResponse } },
      },
    ]),
  );
}
