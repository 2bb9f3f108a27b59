import { defineWorkflow } from "@spool/sdk";

/**
 * Suspends until a person resumes it: `POST /api/v1/executions/{id}/resume` with
 * `{"data": {"approved": true}}`. The pending request is visible as the execution's suspended_data.
 */
export const expenseApproval = defineWorkflow(
  { id: "expense-approval" },
  async (ctx, input: { employee: string; amount: number }) => {
    const request = await ctx.step.run("prepare", () => ({
      ...input,
      submittedAt: new Date().toISOString(),
    }));
    const decision = await ctx.step.suspend<{ approved: boolean; note?: string }>("manager-approval", {
      data: { question: `Approve ${input.amount} for ${input.employee}?`, request },
      timeout: "7d",
    });
    const outcome = await ctx.step.run("record", () => (decision.approved ? "paid" : "rejected"));
    return { outcome, note: decision.note ?? null };
  },
);
