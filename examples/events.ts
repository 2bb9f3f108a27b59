import { defineWorkflow, StepTimeoutError } from "@spool/sdk";

/**
 * Waits for a `payments` event about this invoice:
 * `POST /api/v1/events/publish {"topic":"payments","data":{"invoiceId":"inv_1","paid":true}}`.
 */
export const awaitPayment = defineWorkflow(
  { id: "await-payment" },
  async (ctx, input: { invoiceId: string; timeout?: string }) => {
    try {
      const event = await ctx.step.waitForEvent("payment", {
        topic: "payments",
        match: { invoiceId: input.invoiceId },
        timeout: input.timeout ?? "1h",
      });
      return { invoiceId: input.invoiceId, paid: true, event: event.data };
    } catch (err) {
      if (err instanceof StepTimeoutError) return { invoiceId: input.invoiceId, paid: false };
      throw err;
    }
  },
);
