/**
 * The scheduler's clock for cron. Real time unless SPOOL_CLOCK_SPEED is set (tests only): then time
 * runs `speed` times faster from SPOOL_CLOCK_EPOCH_MS, identically in every process given the same
 * two values, so a test can watch several scheduler replicas fire an every-minute cron in seconds.
 */
export function createClock(speed?: number, epochMs?: number): () => Date {
  if (!speed || speed === 1) return () => new Date();
  const epoch = epochMs ?? Date.now();
  return () => new Date(epoch + (Date.now() - epoch) * speed);
}

/** Real milliseconds until `at` on the scheduler's clock (which runs `speed` times faster in tests). */
export function realMsUntil(at: Date, clock: () => Date, speed?: number): number {
  return (at.getTime() - clock().getTime()) / (speed || 1);
}
