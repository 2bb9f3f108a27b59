import type { Execution } from "@spool/db";
import type { Claim } from "../execution/claim.js";

/**
 * Started runs this process knows under their exact claim, as their start left them: the runs it
 * pushed to remote workers and holds the jobs of (`Engine.pushedRuns`), and the runs a worker route
 * identified for a caller proving such a claim (`RemoteRuns`). A worker route called with the exact
 * claim of one acts on that row instead of reading the run first: the claim proves the caller is
 * the worker the run was pushed to, and the route's own statement checks the claim is still
 * current. Other calls read the run as stored.
 */
export class PushedRuns {
  private readonly runs = new Map<string, Execution>();

  /** `max`: the most runs kept; adding one more forgets the one added longest ago. */
  constructor(private readonly max = Number.POSITIVE_INFINITY) {}

  add(started: Execution): void {
    this.runs.delete(started.id); // re-added: now the newest
    this.runs.set(started.id, started);
    if (this.runs.size > this.max) this.runs.delete(this.runs.keys().next().value as string);
  }

  /** The run left its worker (or the push was not taken): forgets that start, not a later one. */
  remove(started: Execution): void {
    if (this.runs.get(started.id)?.lease === started.lease) this.runs.delete(started.id);
  }

  /** The run as started, when known here under exactly this claim. */
  find(projectId: string, executionId: string, claim: Claim): Execution | undefined {
    const run = this.runs.get(executionId);
    return run?.projectId === projectId && run.dispatchSeq === claim.dispatchSeq && run.lease === claim.lease
      ? run
      : undefined;
  }
}
