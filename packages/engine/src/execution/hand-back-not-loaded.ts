import type { Execution } from "@spool/db";
import type { EngineDeps } from "../deps.js";
import { servedElsewhere } from "../workers/workers.js";
import type { Claim } from "./claim.js";
import { failExecution, releaseExecution } from "./finish-execution.js";

/**
 * How long a run handed back for another worker waits before its next job: short and jittered. All
 * consumers of a queue compete for its jobs and the refusing one often wins again; many quick rounds
 * let a worker that serves the workflow (say, a new release mid rolling deploy) take it soon.
 */
const handBackDelayMs = () => 300 + Math.round(Math.random() * 700);

/**
 * A worker took a run of a workflow it does not have. Handed back when another online worker
 * advertises the workflow in its capabilities; failed with WorkflowNotLoadedError when none does.
 */
export async function handBackNotLoaded(
  deps: EngineDeps,
  args: { execution: Execution; claim: Claim; workerId: string | null },
): Promise<"handed_back" | "failed" | "not_ours"> {
  const e = args.execution;
  if (await servedElsewhere(deps.prisma, e.projectId, e.workflowId, args.workerId)) {
    const released = await releaseExecution(deps, {
      executionId: e.id,
      claim: args.claim,
      delayMs: handBackDelayMs(),
    });
    return released ? "handed_back" : "not_ours";
  }
  const failed = await failExecution(deps, {
    executionId: e.id,
    claim: args.claim,
    error: {
      name: "WorkflowNotLoadedError",
      message: `workflow '${e.workflowId}' is not loaded by any worker serving queue '${e.queueName}' (deployment '${e.deploymentId}')`,
      non_retryable: true,
    },
  });
  return failed ? "failed" : "not_ours";
}
