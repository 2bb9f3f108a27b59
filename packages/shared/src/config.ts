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
