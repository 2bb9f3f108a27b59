import type { z } from "@hono/zod-openapi";
import { type ErrorBody, ErrorResponse, SpoolError } from "@spool/shared";
import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ApiEnv } from "./context.js";

/** The one JSON error writer: every 4xx/5xx of the API goes through here. */
export function errorJson(c: Context, err: SpoolError) {
  return c.json(err.toBody(), err.status as ContentfulStatusCode);
}

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
 * Thrown errors become the contract's error body. Domain errors carry their own type; Hono's
 * HTTPExceptions (malformed JSON, body limit) are mapped by status; anything else is a bug: logged
 * with its stack, answered as a bare 500 without internals.
 */
export const onError: ErrorHandler<ApiEnv> = (err, c) => {
  if (err instanceof SpoolError) return errorJson(c, err);
  if (err instanceof HTTPException && err.status < 500) {
    const type = HTTP_EXCEPTION_TYPES[err.status] ?? "BAD_REQUEST";
    const message =
      err.status === 400 && /JSON/i.test(err.message) ? "malformed JSON in request body" : err.message;
    return errorJson(c, new SpoolError(type, message || type.toLowerCase()));
  }
  c.var.logger?.error({ err, path: c.req.path, method: c.req.method }, "unhandled error");
  return errorJson(c, new SpoolError("INTERNAL_ERROR", "internal error"));
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
  503: "A dependency is unavailable",
};

/** OpenAPI error responses for a route, all sharing the ErrorResponse schema. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      { description: DESCRIPTIONS[s] ?? "Error", content: { "application/json": { schema: ErrorResponse } } },
    ]),
  );
}
