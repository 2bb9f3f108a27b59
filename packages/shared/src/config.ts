import { z } from "@hono/zod-openapi";

/**
 * Parses environment variables with a zod schema. On failure prints every problem in one message and
 * exits, so a misconfigured process stops at start-up instead of failing on first use.
 */
export function loadConfig<T extends z.ZodType>(schema: T, env: NodeJS.ProcessEnv = process.env): z.infer<T> {
  // An empty variable (e.g. `KEY=` in compose or .env) means unset, so defaults apply.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(present);
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`);
  process.stderr.write(`Invalid configuration:\n${lines.join("\n")}\n`);
  process.exit(78); // EX_CONFIG
}

export const DatabaseUrl = z
  .string({ error: "is required (postgres://user:pass@host:5432/db)" })
  .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL");
export const RedisUrl = z
  .string({ error: "is required (redis://host:6379)" })
  .regex(/^rediss?:\/\//, "must be a redis:// URL");
export const LogLevel = z
  .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
  .default("info");

/** Default cap on a result's JSON (SPOOL_MAX_STEP_RESULT_BYTES): 1 MiB, as the API's default body limit. */
export const DEFAULT_MAX_STEP_RESULT_BYTES = 1024 * 1024;

/**
 * SPOOL_MAX_STEP_RESULT_BYTES: the most bytes of JSON one step's result, or a run's own result, may
 * take. A larger one is never stored: the step (or run) fails with StepResultTooLargeError
 * (WorkflowResultTooLargeError), which is not retried. Every process that stores results reads it:
 * the worker (in-cluster runs) and the API (results reported by remote workers).
 *
 * A remote worker's result reaches the API inside a request body, so the API's SPOOL_MAX_BODY_BYTES
 * (default 1 MiB too) bounds it as well: a result near this limit plus its envelope (step key, error,
 * span data, the keys of the steps whose spans went before) can pass the body limit first. Both
 * answer 413 PAYLOAD_TOO_LARGE and the worker fails the step either way; to raise the limit, raise
 * SPOOL_MAX_BODY_BYTES with it (a few KiB above).
 */
export const MaxStepResultBytes = z.coerce
  .number({ error: "must be a number of bytes, e.g. 1048576 for 1 MiB" })
  .int("must be a whole number of bytes")
  .min(1024, "must be at least 1024 bytes")
  .max(1024 * 1024 * 1024, "must be at most 1073741824 bytes (1 GiB)")
  .default(DEFAULT_MAX_STEP_RESULT_BYTES);

/**
 * SPOOL_METRICS_PORT of a worker or scheduler: where it serves GET /metrics (unset: nowhere; 0: a
 * port the OS picks, named in the "metrics listening" log line).
 */
export const MetricsPort = z.coerce
  .number({ error: "must be a port number" })
  .int()
  .min(0)
  .max(65535)
  .optional();

/** SPOOL_METRICS_HOST: the address that /metrics listens on (it has no authentication). */
export const MetricsHost = z.string().min(1).default("127.0.0.1");
