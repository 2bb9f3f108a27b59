import { z } from "@hono/zod-openapi";
import { ERROR_STATUS } from "../errors.js";

export const Timestamp = z.iso.datetime().openapi({ example: "2026-11-22T08:00:00.000Z" });
export const NullableTimestamp = Timestamp.nullable();

/** Free-form JSON object (workflow input, event data, metadata). */
export const JsonObject = z
  .record(z.string(), z.unknown())
  .openapi({ type: "object", additionalProperties: true });
export const JsonValue = z.unknown().openapi({ description: "Any JSON value" });

export const ErrorResponse = z
  .object({
    error: z.string().openapi({ example: "workflow 'x' not found" }),
    error_type: z
      .enum(Object.keys(ERROR_STATUS) as [keyof typeof ERROR_STATUS, ...(keyof typeof ERROR_STATUS)[]])
      .openapi({ example: "NOT_FOUND" }),
    details: z.unknown().optional(),
  })
  .openapi("ErrorResponse");

export const SuccessResponse = z.object({ success: z.literal(true) }).openapi("SuccessResponse");

export const HealthResponse = z
  .object({
    status: z.enum(["healthy", "unhealthy"]),
    version: z.string(),
    checks: z.object({ postgres: z.string(), redis: z.string() }),
  })
  .openapi("HealthResponse");
