import { jsonArg } from "../config.js";
import type { Ctx } from "../context.js";
import { followAndReport } from "./follow.js";

/** `spool run <workflow> [--input <json|@file>] [--wait]`: exit 0 when it completed (or was started). */
export async function runWorkflow(
  ctx: Ctx,
  workflow: string,
  o: {
    input?: string;
    wait: boolean;
    timeout: number;
    queue?: string;
    key?: string;
    idempotencyKey?: string;
  },
): Promise<number> {
  const input = jsonArg(o.input, "--input") ?? {};
  const receipt = await ctx.client.run(workflow, input, {
    queueName: o.queue,
    concurrencyKey: o.key,
    idempotencyKey: o.idempotencyKey,
  });
  if (!o.wait) {
    ctx.out.write(
      ctx.out.json ? `${JSON.stringify(receipt)}\n` : `started ${receipt.execution_id} (${receipt.status})\n`,
    );
    return 0;
  }
  if (!ctx.out.json) ctx.out.write(`started ${receipt.execution_id}\n`);
  return followAndReport(ctx, receipt.execution_id, o.timeout * 1000);
}
