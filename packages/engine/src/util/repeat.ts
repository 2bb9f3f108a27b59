/**
 * Runs `task` now, and again `everyMs` after each run has ended (runs never overlap), until
 * `stop()`, which waits for a run under way. A run that throws is reported to `onError`.
 */
export function repeatEvery(
  task: () => Promise<void>,
  everyMs: number,
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const loop = () => {
    running = task()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, everyMs);
      });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
