import type { Execution } from "@spool/db";
import { isTerminal } from "@spool/shared";
import type { Redis } from "ioredis";
import { SETTLED_CHANNEL } from "./after-finish.js";

/** Re-check interval while waiting, for announcements lost while Redis was away. */
const RECHECK_MS = 2000;

/**
 * Lets a caller wait for a run to settle without polling: one Redis subscription per process
 * (opened on first use) wakes the waiters of the announced run, who re-read it from Postgres. A
 * `?wait=` request waits for a terminal status; a push dispatcher for the run to leave the worker
 * it pushed it to.
 */
export class FinishWatcher {
  private subscriber: Redis | null = null;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(private readonly redis: Redis) {}

  /**
   * The execution once `done` holds for it (default: terminal), or as it is when `timeoutMs` has
   * passed. The waiter is registered before each read, so an announcement between the read and the
   * wait is never missed.
   */
  async wait<T extends Pick<Execution, "status">>(
    read: () => Promise<T>,
    executionId: string,
    timeoutMs: number,
    done: (current: T) => boolean = (current) => isTerminal(current.status),
  ): Promise<T> {
    this.subscribe();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const signal = this.nextSignal(executionId, Math.max(0, Math.min(RECHECK_MS, deadline - Date.now())));
      let current: T;
      try {
        current = await read();
      } catch (err) {
        signal.cancel();
        throw err;
      }
      if (done(current) || Date.now() >= deadline) {
        signal.cancel();
        return current;
      }
      await signal.done;
    }
  }

  private nextSignal(id: string, ms: number): { done: Promise<void>; cancel: () => void } {
    let finish = () => {};
    const done = new Promise<void>((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      let finished = false;
      finish = () => {
        // Once: a wake-up and the caller's cancel may both call it. Only this waiter's own set is
        // dropped from the map (a newer waiter of the run may have made another).
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        set.delete(finish);
        if (set.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      set.add(finish);
    });
    return { done, cancel: finish };
  }

  private subscribe(): void {
    if (this.subscriber) return;
    this.subscriber = this.redis.duplicate({ maxRetriesPerRequest: null });
    this.subscriber.on("error", () => {});
    this.subscriber.on("message", (_channel: string, id: string) => {
      for (const wake of [...(this.waiters.get(id) ?? [])]) wake();
    });
    // Not awaited: with Redis away the subscription waits for it to return, and a waiter must not.
    // Until then waiters re-check on their own (RECHECK_MS).
    void this.subscriber.subscribe(SETTLED_CHANNEL).catch(() => {});
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = null;
  }
}
