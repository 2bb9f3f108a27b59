import type { Logger } from "@spool/shared";
import type { Redis } from "ioredis";

export interface RateLimiterOptions {
  /** Requests per key per second, across every API process (0: no limit). */
  perSecond: number;
  /** How often this process adds its counts to the shared ones in Redis. */
  syncEveryMs?: number;
}

/**
 * Per-key request rate limit shared by every API process through Redis, without a Redis round trip
 * per request: each process counts locally and every `syncEveryMs` adds its counts to the window of
 * each key it saw (INCRBY), learning the total. A key over the limit is refused (429) by every
 * process until its window ends. The limit may be overshot by what other processes admit within
 * one sync interval; a single process never admits more than the limit itself.
 */
export class RateLimiter {
  private window = 0;
  private readonly unsynced = new Map<string, number>();
  private readonly counted = new Map<string, number>();
  private readonly blockedUntil = new Map<string, number>();
  private readonly timer: NodeJS.Timeout | null;
  private syncing = false;

  constructor(
    private readonly redis: Pick<Redis, "pipeline">,
    private readonly logger: Logger,
    private readonly o: RateLimiterOptions,
  ) {
    this.timer = o.perSecond > 0 ? setInterval(() => void this.sync(), o.syncEveryMs ?? 100) : null;
    this.timer?.unref();
  }

  /** Counts one request of `keyId`: 0 when admitted, else the seconds to wait (Retry-After). */
  take(keyId: string, now = Date.now()): number {
    if (this.o.perSecond <= 0) return 0;
    this.roll(now);
    const windowEnd = (this.window + 1) * 1000;
    if ((this.blockedUntil.get(keyId) ?? 0) > now) return Math.max(1, Math.ceil((windowEnd - now) / 1000));
    const seen = (this.counted.get(keyId) ?? 0) + 1;
    if (seen > this.o.perSecond) {
      this.blockedUntil.set(keyId, windowEnd);
      return Math.max(1, Math.ceil((windowEnd - now) / 1000));
    }
    this.counted.set(keyId, seen);
    this.unsynced.set(keyId, (this.unsynced.get(keyId) ?? 0) + 1);
    return 0;
  }

  /** A new one-second window: every count starts again. */
  private roll(now: number): void {
    const window = Math.floor(now / 1000);
    if (window === this.window) return;
    this.window = window;
    this.unsynced.clear();
    this.counted.clear();
    for (const [key, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(key);
  }

  /** Adds this process's counts to the shared window; a key whose total passed the limit is blocked here too. */
  async sync(now = Date.now()): Promise<void> {
    this.roll(now);
    if (this.syncing || this.counted.size === 0) return;
    this.syncing = true;
    const window = this.window;
    // Every key seen this window, with what it added since (maybe nothing): the answer is the total.
    const batch = [...this.counted.keys()].map((key) => [key, this.unsynced.get(key) ?? 0] as const);
    this.unsynced.clear();
    try {
      const pipeline = this.redis.pipeline();
      for (const [key, n] of batch)
        pipeline.incrby(`spool:rate:${key}:${window}`, n).expire(`spool:rate:${key}:${window}`, 3);
      const results = (await pipeline.exec()) ?? [];
      if (window !== this.window) return;
      batch.forEach(([key], i) => {
        const total = Number(results[i * 2]?.[1] ?? 0);
        // What other processes admitted counts against this process's own admissions too.
        if (total > (this.counted.get(key) ?? 0)) this.counted.set(key, total);
        if (total >= this.o.perSecond) this.blockedUntil.set(key, (window + 1) * 1000);
      });
    } catch (err) {
      // Redis away: each process still holds its own admissions to the limit.
      this.logger.debug({ err: String(err) }, "rate limit counts not shared");
    } finally {
      this.syncing = false;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
