import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** Where the CLI talks to, and as whom. */
export interface Connection {
  apiUrl: string;
  apiKey: string;
  projectId: string;
}

export class UsageError extends Error {}

/**
 * The API's URL, key and project: from flags, else the environment (SPOOL_API_URL, SPOOL_API_KEY,
 * SPOOL_PROJECT_ID), else `npm run dev`'s dev.json (SPOOL_DATA_DIR, else ./.data).
 */
export function connectionOf(
  flags: { "api-url"?: string; "api-key"?: string; project?: string },
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Connection {
  const devJson = resolve(cwd, env.SPOOL_DATA_DIR ?? ".data", "dev.json");
  const dev = existsSync(devJson) ? (readDevJson(devJson) ?? {}) : {};
  const apiUrl = flags["api-url"] ?? env.SPOOL_API_URL ?? dev.api_url;
  const apiKey = flags["api-key"] ?? env.SPOOL_API_KEY ?? dev.api_key;
  const projectId = flags.project ?? env.SPOOL_PROJECT_ID ?? dev.project_id;
  const missing = [
    !apiUrl && "the API's URL (--api-url or SPOOL_API_URL)",
    !apiKey && "an API key (--api-key or SPOOL_API_KEY)",
    !projectId && "the project id (--project or SPOOL_PROJECT_ID)",
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new UsageError(
      `missing ${missing.join(", ")}; with npm run dev running, ${join(".data", "dev.json")} has all three`,
    );
  }
  return { apiUrl: apiUrl!, apiKey: apiKey!, projectId: projectId! };
}

/** `npm run dev`'s dev.json; a file that cannot be read or parsed is a usage error naming it. */
function readDevJson(path: string): { api_url?: string; api_key?: string; project_id?: string } | null {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${reason(err)}`);
  }
}

/** Why reading a file failed, for a person ("no such file or directory", not the errno dump). */
function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "it is a directory";
    default:
      return e.message ?? String(err);
  }
}

/** A JSON argument: inline JSON, or `@path` to read it from a file. */
export function jsonArg(value: string | undefined, what: string, cwd = process.cwd()): unknown {
  if (value === undefined) return undefined;
  let text = value;
  let source = what;
  if (value.startsWith("@")) {
    const file = value.slice(1);
    if (!file) throw new UsageError(`${what} @: missing a file name after @`);
    try {
      text = readFileSync(resolve(cwd, file), "utf8");
    } catch (err) {
      throw new UsageError(`${what}: cannot read file '${file}': ${reason(err)}`);
    }
    source = `${what} file '${file}'`;
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not JSON: ${(err as Error).message}`);
  }
}

/** A number of seconds (`--timeout`): a non-negative decimal, else a usage error. */
export function secondsArg(value: string, what: string): number {
  const seconds = /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isFinite(seconds)) {
    throw new UsageError(`${what} must be a number of seconds (0 or more), not '${value}'`);
  }
  return seconds;
}

/** A whole number of at least `min` (`--limit`, `--from`), else a usage error. */
export function countArg(value: string | undefined, what: string, min = 1): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\s*\d+\s*$/.test(value) || Number(value) < min) {
    throw new UsageError(`${what} must be a whole number of at least ${min}, not '${value}'`);
  }
  return Number(value);
}
