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
  private readonly runs = new Map<string, { run: Execution; at: number }>();
  /** Runs pushed before their insert, by id: settled once the insert is done, either way. */
  private readonly inserting = new Map<string, Promise<unknown>>();

  /**
   * `max`: the most runs kept (adding one more forgets the one added longest ago); `ttlMs`: how
   * long one is known after it was added (for runs whose end this process may not see).
   */
  constructor(private readonly o: { max?: number; ttlMs?: number } = {}) {}

  add(started: Execution): void {
    this.runs.delete(started.id); // re-added: now the newest
    this.runs.set(started.id, { run: started, at: Date.now() });
    if (this.runs.size > (this.o.max ?? Number.POSITIVE_INFINITY)) {
      this.runs.delete(this.runs.keys().next().value as string);
    }
  }

  /**
   * A run pushed before its insert (push-dispatcher.ts): its worker's calls may come first, and wait
   * for `insert` to be done, which adds the run here when it succeeds.
   */
  expectInsert(executionId: string, insert: Promise<unknown>): void {
    const done = insert.then(
      () => {},
      () => {},
    );
    this.inserting.set(executionId, done);
    void done.then(() => {
      if (this.inserting.get(executionId) === done) this.inserting.delete(executionId);
    });
  }

  /** Done once the run's insert is, when it was pushed from here before it (undefined otherwise). */
  insertOf(executionId: string): Promise<unknown> | undefined {
    return this.inserting.get(executionId);
  }

  /** The run left its worker (or the push was not taken): forgets that start, not a later one. */
  remove(started: Execution): void {
    if (this.runs.get(started.id)?.run.lease === started.lease) this.runs.delete(started.id);
  }

  /** Forgets whatever start of the run is known here. */
  forget(executionId: string): void {
    this.runs.delete(executionId);
  }

  /** The run as started, when known here under exactly this claim. */
  find(projectId: string, executionId: string, claim: Claim): Execution | undefined {
    const known = this.runs.get(executionId);
    if (!known) return undefined;
    if (this.o.ttlMs !== undefined && Date.now() - known.at > this.o.ttlMs) {
      this.runs.delete(executionId);
      return undefined;
    }
    const run = known.run;
    return run.projectId === projectId && run.dispatchSeq === claim.dispatchSeq && run.lease === claim.lease
      ? run
      : undefined;
  }
}
