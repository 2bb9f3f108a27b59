import { createClient, type SpoolClient } from "@spool/sdk/client";
import type { Connection } from "./config.js";
import type { Output } from "./output.js";

/** What every command works with. */
export interface Ctx {
  client: SpoolClient;
  conn: Connection;
  out: Output;
}

export const contextOf = (conn: Connection, out: Output): Ctx => ({
  client: createClient({ baseUrl: conn.apiUrl, apiKey: conn.apiKey, projectId: conn.projectId }),
  conn,
  out,
});

/** The headers of a raw request (the event stream, which the typed client does not read). */
export const headersOf = (conn: Connection) => ({
  authorization: `Bearer ${conn.apiKey}`,
  "x-project-id": conn.projectId,
});
