import type { Logger } from "@spool/shared";

/**
 * Runs `tick` every `intervalMs`, never overlapping itself; a failing tick is logged and the loop
 * goes on (Postgres or Redis may be briefly away). `stop()` waits for the running tick.
 */
export function startLoop(args: {
  name: string;
  intervalMs: number;
  logger: Logger;
  tick: () => Promise<void>;
}) {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const run = async () => {
    try {
      await args.tick();
    } catch (err) {
      args.logger.warn(
        { loop: args.name, err: err instanceof Error ? err.message : String(err) },
        "tick failed",
      );
    }
    if (!stopped) timer = setTimeout(() => (running = run()), args.intervalMs);
  };
  running = run();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
