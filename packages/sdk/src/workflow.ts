import {
  NonRetryableError,
  WORKFLOW_BRAND,
  type WorkflowContext,
  type WorkflowDefinition,
  type WorkflowOptions,
} from "@spool/shared";

const ID_PATTERN = /^[A-Za-z0-9._:/-]{1,200}$/;

/**
 * Defines a durable workflow. Every side effect belongs in a step (`ctx.step.run`): the function is
 * replayed from the top after each wait or crash, and completed steps return their stored results.
 *
 * ```ts
 * export const greet = defineWorkflow({ id: "greet" }, async (ctx, input: { name: string }) => {
 *   const text = await ctx.step.run("compose", () => `hello ${input.name}`);
 *   await ctx.step.sleep("pause", "5s");
 *   return { text };
 * });
 * ```
 */
export function defineWorkflow<I = Record<string, unknown>, O = unknown>(
  options: WorkflowOptions<I>,
  handler: (ctx: WorkflowContext<I>, input: I) => Promise<O>,
): WorkflowDefinition<I, O> {
  if (!ID_PATTERN.test(options.id)) {
    throw new TypeError(`workflow id '${options.id}' must be 1-200 characters of A-Z a-z 0-9 . _ : / -`);
  }
  if (options.retries !== undefined && (!Number.isInteger(options.retries) || options.retries < 0)) {
    throw new TypeError(`workflow '${options.id}': retries must be a whole number >= 0`);
  }
  const schema = options.inputSchema;
  return Object.freeze({
    [WORKFLOW_BRAND]: true as const,
    kind: "workflow" as const,
    id: options.id,
    options,
    handler: schema
      ? async (ctx: WorkflowContext<I>, raw: I) => {
          const parsed = schema.safeParse(raw);
          if (!parsed.success) {
            const fields = parsed.error.issues.map((i) => `${i.path.join(".") || "(input)"}: ${i.message}`);
            throw new NonRetryableError(`invalid input for workflow '${options.id}': ${fields.join("; ")}`);
          }
          return handler({ ...ctx, input: parsed.data }, parsed.data);
        }
      : handler,
  });
}
