import { type Logger, pino } from "pino";

export type { Logger } from "pino";

/** Paths pino blanks out wherever they appear in a log line: secrets never reach the logs. */
const REDACT = [
  "authorization",
  "cookie",
  "apiKey",
  "api_key",
  "key",
  "adminKey",
  "password",
  "*.authorization",
  "*.cookie",
  "*.apiKey",
  "*.api_key",
  "*.adminKey",
  "*.password",
  "headers.authorization",
  "headers.cookie",
  "req.headers.authorization",
  "req.headers.cookie",
];

export function createLogger(name: string, level = process.env.SPOOL_LOG_LEVEL ?? "info"): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: "[redacted]" } });
}
