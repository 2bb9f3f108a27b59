import type { Execution, Prisma } from "@spool/db";

/**
 * What a worker holds while it runs an execution: the dispatch sequence of the job it took (which
 * run state the job was made for) and the lease its start took (which start of that job it is).
 * BullMQ redelivers a job whose lock expired even if its first worker is still alive; the second
 * start bumps the lease, so the first worker's next write finds the run no longer its own.
 */
export interface Claim {
  dispatchSeq: number;
  lease: number;
}

export const claimOf = (e: Pick<Execution, "dispatchSeq" | "lease">): Claim => ({
  dispatchSeq: e.dispatchSeq,
  lease: e.lease,
});

/** The row guard of a write made under a claim; without one (a sweep, a timeout) it guards nothing. */
export const heldUnder = (claim?: Claim): Prisma.ExecutionWhereInput =>
  claim ? { dispatchSeq: claim.dispatchSeq, lease: claim.lease } : {};
