import type { Execution } from "@spool/db";
import type { Claim } from "../execution/claim.js";

/**
 * The runs this process has pushed to remote workers and holds the jobs of, as their starts left
 * them. A worker route called with the exact claim of one acts on that row instead of reading the
 * run first: the claim proves the caller is the worker it was pushed to, and the route's own
 * statement checks the claim is still current. Calls that reach another API replica, or come for a
 * run no longer held here, read the run as stored.
 */
export class PushedRuns {
  private readonly runs = new Map<string, Execution>();

  add(started: Execution): void {
    this.runs.set(started.id, started);
  }

  /** The run left its worker (or the push was not taken): forgets that start, not a later one. */
  remove(started: Execution): void {
    if (this.runs.get(started.id)?.lease === started.lease) this.runs.delete(started.id);
  }

  /** The run as started, when this process pushed it under exactly this claim. */
  find(projectId: string, executionId: string, claim: Claim): Execution | undefined {
    const run = this.runs.get(executionId);
    return run?.projectId === projectId && run.dispatchSeq === claim.dispatchSeq && run.lease === claim.lease
      ? run
      : undefined;
  }
}
