import type { Logger } from "@spool/shared";

/** A tick's answer: how long until it has something to do again (ms), or nothing known (undefined). */
export type NextTickIn = number | undefined;

export interface Loop {
  /** Settles when the first tick has (it runs at once). */
  readonly firstTick: Promise<void>;
  /** Tick soon, though not sooner than `minGapMs` after the last tick began (e.g. a change was announced). */
  wake(): void;
  /** No more ticks; waits for the running one. */
  stop(): Promise<void>;
}

/**
 * Runs `tick` over and over, never overlapping itself; a failing tick is logged and the loop goes on
 * (Postgres or Redis may be briefly away). After a tick the loop waits `intervalMs`, or less when
 * the tick says when it has something to do next (a due occurrence, a batch timing out): an idle
 * loop then costs one tick per interval instead of one per short poll, and a due time is met to the
 * millisecond instead of at the next poll. Something due already (it could not be done, say) waits
 * `minGapMs`, so a tick that keeps failing does not spin. `wake()` asks for a tick sooner.
 */
export function startLoop(args: {
  name: string;
  intervalMs: number;
  /** Least time from one tick's start to the next one's when woken or overdue (default: none). */
  minGapMs?: number;
  logger: Logger;
  // biome-ignore lint/suspicious/noConfusingVoidType: a tick that knows no due time returns nothing.
  tick: () => Promise<NextTickIn | void>;
}): Loop {
  const minGapMs = Math.min(args.minGapMs ?? 0, args.intervalMs);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** When the pending timer fires (Infinity: no timer, a tick is running). */
  let timerAt = Number.POSITIVE_INFINITY;
  let ticking = false;
  let wokenWhileTicking = false;
  let lastStart = 0;
  let running: Promise<void> = Promise.resolve();

  const tickAt = (at: number) => {
    if (stopped || at >= timerAt) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(
      () => {
        timerAt = Number.POSITIVE_INFINITY;
        running = run();
      },
      Math.max(0, at - Date.now()),
    );
  };
  const run = async () => {
    ticking = true;
    wokenWhileTicking = false;
    lastStart = Date.now();
    let wait = args.intervalMs;
    try {
      const next = await args.tick();
      if (typeof next === "number" && Number.isFinite(next)) {
        wait = Math.min(args.intervalMs, next > 0 ? next : minGapMs);
      }
    } catch (err) {
      args.logger.warn(
        { loop: args.name, err: err instanceof Error ? err.message : String(err) },
        "tick failed",
      );
    }
    ticking = false;
    // Woken during the tick: what woke it may have come after the tick read what it needed.
    tickAt(wokenWhileTicking ? lastStart + minGapMs : Date.now() + wait);
  };
  running = run();
  const firstTick = running;
  return {
    firstTick,
    wake() {
      if (stopped) return;
      if (ticking) wokenWhileTicking = true;
      else tickAt(Math.max(Date.now(), lastStart + minGapMs));
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
