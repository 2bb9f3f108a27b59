import { z } from "@hono/zod-openapi";

/** Security requirement of every authenticated route: either scheme. */
export const AUTHENTICATED: Record<string, string[]>[] = [{ bearer_auth: [] }, { cookie_auth: [] }];

/** Documented on project-scoped routes; enforced by the requireProject middleware (alias Project-ID). */
export const ProjectHeaders = z.object({
  "X-Project-ID": z
    .string()
    .optional()
    .openapi({ param: { in: "header", required: true }, description: "The project's id" }),
});

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

/** Standard statuses: every authenticated route can answer these. */
export const AUTH_ERRORS = [400, 401, 403, 404, 413, 415] as const;
