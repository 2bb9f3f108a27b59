// The examples the default worker serves (SPOOL_WORKFLOWS_MODULE points here unless set).
import { defineQueue } from "@spool/sdk";

export { expenseApproval } from "./approval.js";
export { awaitPayment, orderDigest } from "./events.js";
export { processOrder, reserveStock } from "./order.js";
export { publishReport, researchAgent, searchNotes } from "./research-agent.js";

export const ordersQueue = defineQueue({ name: "orders", concurrencyLimit: 20 });
