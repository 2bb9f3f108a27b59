import { z } from "@hono/zod-openapi";
import { Uuid } from "../ids.js";
import { NextCursor } from "../pagination.js";
import { NullableTimestamp, Text, Timestamp } from "./common.js";

export const ProjectParams = z.object({
  project_id: z
    .string()
    .openapi({ param: { name: "project_id", in: "path" }, example: "0b6f5c9e-6d1c-4f5e-9d6b-2f0d1e6a7c11" }),
});

export const CreateProjectBody = z
  .object({
    name: Text.trim().min(1).max(200),
    description: Text.max(2000).nullish(),
  })
  .openapi("CreateProjectBody");

export const ProjectResponse = z
  .object({
    id: Uuid,
    name: z.string(),
    description: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Project");

export const ListProjectsResponse = z
  .object({ projects: z.array(ProjectResponse), next_cursor: NextCursor })
  .openapi("ListProjectsResponse");

/**
 * What a key may do: `admin` everything in its project, keys included; `worker` register workers,
 * deployments, queues, workflows, agents, tools, triggers and schedules, the worker protocol
 * (`/internal`) and publish; `client` run, read, cancel, resume and publish. A key created before
 * scopes existed has none and may do all but manage keys.
 */
export const KEY_SCOPES = ["admin", "worker", "client"] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];
export const KeyScopeSchema = z.enum(KEY_SCOPES).openapi("KeyScope");

export const CreateApiKeyBody = z
  .object({
    name: Text.trim().min(1).max(200),
    scope: KeyScopeSchema.optional().openapi({
      description: "admin, worker or client; omitted: all but managing keys (as keys made before scopes)",
    }),
  })
  .openapi("CreateApiKeyBody");

export const CreateApiKeyResponse = z
  .object({
    id: Uuid,
    name: z.string(),
    key: z.string().openapi({ description: "The key itself; shown only in this response" }),
    scope: KeyScopeSchema.nullable(),
    last_four: z.string(),
    created_at: Timestamp,
  })
  .openapi("CreatedApiKey");

export const ApiKeyResponse = z
  .object({
    id: Uuid,
    name: z.string(),
    scope: KeyScopeSchema.nullable(),
    last_four: z.string(),
    created_at: Timestamp,
    last_used_at: NullableTimestamp,
    revoked_at: NullableTimestamp,
  })
  .openapi("ApiKey");

export const ListApiKeysResponse = z
  .object({ api_keys: z.array(ApiKeyResponse), next_cursor: NextCursor })
  .openapi("ListApiKeysResponse");

export const ApiKeyParams = ProjectParams.extend({
  key_id: z.string().openapi({ param: { name: "key_id", in: "path" } }),
});

/** Signing in to the dashboard: the API key goes into the HttpOnly `service_auth` cookie. */
export const CreateSessionBody = z
  .object({ api_key: Text.min(1).max(200).openapi({ description: "A project key or the admin key" }) })
  .openapi("CreateSessionBody");

/** Who the session (or bearer key) is: the admin key, or a project's key with its scope. */
export const SessionResponse = z
  .object({
    kind: z.enum(["admin", "project"]),
    project_id: Uuid.nullable().openapi({ description: "The key's project (null for the admin key)" }),
    scope: KeyScopeSchema.nullable().openapi({
      description: "The key's scope (null: the admin key, or a key from before scopes)",
    }),
  })
  .openapi("Session");
