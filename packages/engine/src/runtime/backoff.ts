import { type BackoffOptions, parseDuration, RetryAfterError } from "@spool/shared";

/** Delay before retry `attempt` (1-based): exponential with full jitter, capped; RetryAfterError wins. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, err?: unknown): number {
  if (err instanceof RetryAfterError) return err.retryAfterMs;
  const initial = parseDuration(options.initial ?? 1000);
  const max = parseDuration(options.max ?? 60_000);
  const factor = options.factor ?? 2;
  const ceiling = Math.min(max, initial * factor ** (attempt - 1));
  // Half fixed, half jitter: spreads retries of many runs without ever retrying instantly.
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
