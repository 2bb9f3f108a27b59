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
  const dev = existsSync(devJson)
    ? (JSON.parse(readFileSync(devJson, "utf8")) as {
        api_url?: string;
        api_key?: string;
        project_id?: string;
      })
    : {};
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

/** A JSON argument: inline JSON, or `@path` to read it from a file. */
export function jsonArg(value: string | undefined, what: string, cwd = process.cwd()): unknown {
  if (value === undefined) return undefined;
  const text = value.startsWith("@") ? readFileSync(resolve(cwd, value.slice(1)), "utf8") : value;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`);
  }
}
