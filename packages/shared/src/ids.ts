import { z } from "@hono/zod-openapi";

/** Client-chosen ids (workflow, agent, tool, deployment, queue): 1–200 chars of [A-Za-z0-9._:/-]. */
export const CLIENT_ID_PATTERN = /^[A-Za-z0-9._:/-]{1,200}$/;

export const ClientId = z
  .string()
  .regex(CLIENT_ID_PATTERN, "must be 1-200 characters of A-Z a-z 0-9 . _ : / -")
  .openapi({ example: "order-workflow" });

export const Uuid = z.uuid().openapi({ example: "0b6f5c9e-6d1c-4f5e-9d6b-2f0d1e6a7c11" });

export const isUuid = (value: string): boolean => Uuid.safeParse(value).success;

/** trace ids are the root execution id without dashes. */
export const traceIdOf = (rootExecutionId: string): string => rootExecutionId.replaceAll("-", "");
