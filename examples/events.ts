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

/**
 * Started by an event trigger with a batch of `orders` events (`{events, trigger_id}`): what a
 * trigger's workflow receives. Register it with
 * `POST /api/v1/event-triggers/register {"workflow_id":"order-digest","event_topic":"orders",...}`.
 */
export const orderDigest = defineWorkflow(
  { id: "order-digest" },
  async (ctx, input: { events: { sequence_id: number; data: { orderId?: string; total?: number } }[] }) =>
    ctx.step.run("summarize", () => ({
      orders: input.events.length,
      orderIds: input.events.map((e) => e.data.orderId ?? null),
      total: input.events.reduce((sum, e) => sum + (e.data.total ?? 0), 0),
    })),
);
