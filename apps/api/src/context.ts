import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Engine, Principal } from "@spool/engine";
import type { Logger } from "@spool/shared";

export interface ApiVariables {
  engine: Engine;
  logger: Logger;
  principal: Principal;
  /** Set on project-scoped routes once X-Project-ID has been checked against the principal. */
  projectId: string;
}

export type ApiEnv = { Variables: ApiVariables };
export type App = OpenAPIHono<ApiEnv>;
