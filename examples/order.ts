import { defineWorkflow } from "@spool/sdk";

interface OrderInput {
  orderId: string;
  items: { sku: string; quantity: number; price: number }[];
}

/** A child workflow: reserves stock for one order. */
export const reserveStock = defineWorkflow(
  { id: "reserve-stock", queue: "inventory" },
  async (ctx, input: { orderId: string; skus: string[] }) => {
    const reservation = await ctx.step.run("reserve", () => ({
      orderId: input.orderId,
      reserved: input.skus,
      reservationId: `res_${input.orderId}`,
    }));
    return reservation;
  },
);

/**
 * Steps, a durable sleep and a child workflow. Every step's result is stored: after a crash the
 * run continues from the last completed step, and a payment is never taken twice.
 */
export const processOrder = defineWorkflow(
  { id: "process-order", queue: "orders", retries: 2 },
  async (ctx, input: OrderInput) => {
    const total = await ctx.step.run("price", () =>
      input.items.reduce((sum, item) => sum + item.quantity * item.price, 0),
    );
    const reservation = await ctx.step.invoke("reserve-stock", reserveStock, {
      orderId: input.orderId,
      skus: input.items.map((i) => i.sku),
    });
    const paymentId = await ctx.step.run("charge", async () => `pay_${input.orderId}_${total}`);
    // Give the warehouse a moment before confirming; the worker is free meanwhile.
    await ctx.step.sleep("cool-off", "2s");
    const confirmedAt = await ctx.step.now("confirmed-at");
    return {
      orderId: input.orderId,
      total,
      paymentId,
      reservationId: reservation.reservationId,
      confirmedAt,
    };
  },
);
