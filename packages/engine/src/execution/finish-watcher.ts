import type { Execution } from "@spool/db";
import { isTerminal } from "@spool/shared";
import type { Redis } from "ioredis";
import { FINISHED_CHANNEL } from "./after-finish.js";

/** Re-check interval while waiting, for announcements lost while Redis was away. */
const RECHECK_MS = 2000;

/**
 * Lets a request wait for a run to finish without polling: one Redis subscription per process
 * (opened on first use) wakes the waiters of the announced run, who re-read it from Postgres.
 */
export class FinishWatcher {
  private subscriber: Redis | null = null;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(private readonly redis: Redis) {}

  /**
   * The execution once terminal, or as it is when `timeoutMs` has passed. The waiter is registered
   * before each read, so a finish announced between the read and the wait is never missed.
   */
  async wait<T extends Pick<Execution, "status">>(
    read: () => Promise<T>,
    executionId: string,
    timeoutMs: number,
  ): Promise<T> {
    this.subscribe();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const signal = this.nextSignal(executionId, Math.max(0, Math.min(RECHECK_MS, deadline - Date.now())));
      const current = await read();
      if (isTerminal(current.status) || Date.now() >= deadline) {
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
      finish = () => {
        clearTimeout(timer);
        set.delete(finish);
        if (set.size === 0) this.waiters.delete(id);
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
    void this.subscriber.subscribe(FINISHED_CHANNEL).catch(() => {});
  }

  close(): void {
    this.subscriber?.disconnect();
    this.subscriber = null;
  }
}
