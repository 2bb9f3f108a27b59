import type { Execution } from "@spool/db";
import { isTerminal } from "@spool/shared";
import type { Redis } from "ioredis";
import { readAnnouncement, SETTLED_CHANNEL } from "./after-finish.js";

/** Re-check interval while waiting, for announcements lost while Redis was away. */
const RECHECK_MS = 2000;

/**
 * Lets a caller wait for a run to settle without polling: one Redis subscription per process
 * (opened on first use) wakes the waiters of the announced run, who re-read it from Postgres unless
 * the announcement carries the finished row they wait for; a transition this process made itself
 * wakes them at once (wake). A `?wait=` request waits for a terminal status; a push dispatcher for
 * the run to leave the worker it pushed it to.
 */
export class FinishWatcher {
  private subscriber: Redis | null = null;
  private readonly waiters = new Map<string, Set<(row?: Execution) => void>>();

  constructor(
    private readonly redis: Redis,
    /** How often a waiter reads the run again on its own (tests set it beyond their waits). */
    private readonly recheckMs = RECHECK_MS,
  ) {}

  /**
   * The execution once `done` holds for it (default: terminal), or as it is when `timeoutMs` has
   * passed. The waiter is registered before each read, so an announcement between the read and the
   * wait is never missed. `first` replaces the first read: what it returns should be read (or
   * created) after it is called, as the run is only watched from then on; a transition announced
   * between an earlier read and this call is seen at the next re-check (RECHECK_MS).
   */
  async wait<T extends Pick<Execution, "status">>(
    executionId: string,
    read: () => Promise<T>,
    timeoutMs: number,
    o: {
      done?: (current: T) => boolean;
      /** The caller's view of a finished row an announcement carries (undefined: read it instead). */
      fromAnnounced?: (row: Execution) => T | undefined;
      first?: () => Promise<T>;
      /** The caller gave up (its client went away): stop at once, answering the last state read. */
      signal?: AbortSignal;
    } = {},
  ): Promise<T> {
    const done = o.done ?? ((current: T) => isTerminal(current.status));
    this.subscribe();
    const deadline = Date.now() + timeoutMs;
    let next = o.first ?? read;
    for (;;) {
      const signal = this.nextSignal(
        executionId,
        Math.max(0, Math.min(this.recheckMs, deadline - Date.now())),
      );
      let current: T;
      try {
        current = await next();
      } catch (err) {
        signal.cancel();
        throw err;
      }
      next = read;
      if (done(current) || Date.now() >= deadline || o.signal?.aborted) {
        signal.cancel();
        return current;
      }
      const stop = () => signal.cancel();
      o.signal?.addEventListener("abort", stop, { once: true });
      const row = await signal.done;
      o.signal?.removeEventListener("abort", stop);
      if (o.signal?.aborted) return current;
      const announced = row && o.fromAnnounced?.(row);
      if (announced && done(announced)) return announced;
    }
  }

  private nextSignal(id: string, ms: number): { done: Promise<Execution | undefined>; cancel: () => void } {
    let finish: (row?: Execution) => void = () => {};
    const done = new Promise<Execution | undefined>((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      let finished = false;
      finish = (row?: Execution) => {
        // Once: a wake-up and the caller's cancel may both call it. Only this waiter's own set is
        // dropped from the map (a newer waiter of the run may have made another).
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        set.delete(finish);
        if (set.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
        resolve(row);
      };
      const timer = setTimeout(() => finish(), ms);
      set.add(finish);
    });
    return { done, cancel: () => finish() };
  }

  private subscribe(): void {
    if (this.subscriber) return;
    this.subscriber = this.redis.duplicate({ maxRetriesPerRequest: null });
    this.subscriber.on("error", () => {});
    this.subscriber.on("message", (_channel: string, message: string) => {
      const { id, row } = readAnnouncement(message);
      if (!this.waiters.has(id)) return;
      let carried: Execution | undefined;
      try {
        carried = row();
      } catch {
        // Not a row we can read: the waiters read the run themselves.
      }
      this.wakeWaiters(id, carried);
    });
    // Not awaited: with Redis away the subscription waits for it to return, and a waiter must not.
    // Until then waiters re-check on their own (RECHECK_MS).
    void this.subscriber.subscribe(SETTLED_CHANNEL).catch(() => {});
  }

  /**
   * The run's transition committed in this process (its announcement follows): its waiters here
   * wake now. As an announcement does, a finished row is handed to them; any other is read again.
   */
  wake(execution: Execution): void {
    this.wakeWaiters(execution.id, isTerminal(execution.status) ? execution : undefined);
  }

  private wakeWaiters(id: string, row: Execution | undefined): void {
    const waiting = this.waiters.get(id);
    if (waiting) for (const wake of [...waiting]) wake(row);
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = null;
  }
}
