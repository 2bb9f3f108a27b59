import {
  NonRetryableError,
  type ToolContext,
  type ToolDefinition,
  type ToolOptions,
  WORKFLOW_BRAND,
  type WorkflowContext,
} from "@spool/shared";

const ID_PATTERN = /^[A-Za-z0-9._:/-]{1,200}$/;

/**
 * Defines a tool an agent may call. `input` (a zod schema) is what the model sees, as JSON Schema,
 * and what every call is validated against. A tool is also a workflow of kind "tool": run it on its
 * own through `/workflows/{id}/run`, or from a workflow with `ctx.step.tool(key, tool, input)`.
 *
 * ```ts
 * export const search = defineTool(
 *   { id: "search", description: "Search the web", input: z.object({ query: z.string() }) },
 *   async ({ query }) => fetchResults(query),
 * );
 * ```
 */
export function defineTool<I, O>(
  options: ToolOptions<I>,
  execute: (input: I, ctx: ToolContext) => Promise<O> | O,
): ToolDefinition<I, O> {
  if (!ID_PATTERN.test(options.id)) {
    throw new TypeError(`tool id '${options.id}' must be 1-200 characters of A-Z a-z 0-9 . _ : / -`);
  }
  if (!options.description)
    throw new TypeError(`tool '${options.id}' needs a description: the model reads it`);
  const approval = options.approval ?? "never";
  if (approval !== "always" && approval !== "never") {
    throw new TypeError(`tool '${options.id}': approval must be "always" or "never"`);
  }
  const definition: ToolDefinition<I, O> = Object.freeze({
    [WORKFLOW_BRAND]: true as const,
    kind: "tool" as const,
    id: options.id,
    options: {
      id: options.id,
      queue: options.queue,
      retries: options.retries,
      description: options.description,
    },
    tool: Object.freeze({
      description: options.description,
      input: options.input,
      approval,
      execute: async (input: I, ctx: ToolContext) => execute(input, ctx),
    }),
    // Run on its own, a tool is a one-step workflow (with the same approval gate as in an agent).
    handler: async (ctx: WorkflowContext<I>, input: I): Promise<O> => {
      if (input === undefined) throw new NonRetryableError(`tool '${options.id}' needs an input`);
      return ctx.step.tool("call", definition, input);
    },
  });
  return definition;
}
