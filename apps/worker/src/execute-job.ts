import type { Execution } from "@spool/db";
import {
  type Claim,
  createPostgresHost,
  type Delivery,
  type Engine,
  type JobData,
  type NewRun,
  processRun,
} from "@spool/engine";
import type { Logger, WorkflowDefinition } from "@spool/shared";

export interface InFlight {
  executionId: string;
  claim: Claim;
  /**
   * Ends the job now, after a drain handed the run back: BullMQ then completes it normally instead
   * of keeping it active until its lock expires. The replay
   * left behind is refused at its next step (the hand-back bumped the dispatch sequence); a step it
   * finishes meanwhile is kept and adopted by the next worker, not run again.
   */
  handBack: () => void;
}

/**
 * Adapts one BullMQ job to the engine: a timer job fires its wait, a run job goes through the
 * engine's job runner against Postgres. The returned string is the job's recorded result. A run
 * started on this process without a job goes the same way, as the job of its current dispatch.
 */
export async function executeJob(args: {
  engine: Engine;
  data: JobData;
  /** How the queue delivered the job (none for a run started on this process without one). */
  delivery?: Delivery;
  /** The run as an API started it on this process without a job (in-cluster/direct-runs.ts). */
  started?: Execution;
  /** A new run an API sent to this process before inserting it (in-cluster/direct-runs.ts). */
  newRun?: NewRun;
  workflows: Map<string, WorkflowDefinition>;
  workerId: () => string | null;
  logger: Logger;
  inFlight: Map<string, InFlight>;
}): Promise<string> {
  const { engine, data } = args;
  if (data.kind === "timer") {
    return (await engine.executions.fireTimer(data.waitId)) ? "timer fired" : "timer not due";
  }
  let handBack = () => {};
  const handedBack = new Promise<string>((resolve) => {
    handBack = () => resolve("handed back");
  });
  const host = createPostgresHost(engine, data, {
    workerId: args.workerId,
    logger: args.logger,
    delivery: args.delivery,
    started: args.started,
    newRun: args.newRun,
    onStarted: (claim) =>
      args.inFlight.set(data.executionId, { executionId: data.executionId, claim, handBack }),
  });
  try {
    const running = processRun({ host, workflows: args.workflows, logger: args.logger });
    return await Promise.race([running, handedBack]);
  } finally {
    args.inFlight.delete(data.executionId);
  }
}
