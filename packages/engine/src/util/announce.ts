import type { Redis } from "ioredis";

/**
 * Tells the schedulers that a project's schedules or triggers changed (`channel`), so they look
 * again before their next due time. Best effort: they also look on their own every check interval,
 * and Redis being away must not fail the change itself. Returns `changed`, for the caller to pass on.
 */
export async function announceChange<T>(
  redis: Pick<Redis, "publish"> | undefined,
  channel: string,
  projectId: string,
  changed: T,
): Promise<T> {
  await redis?.publish(channel, projectId).catch(() => {});
  return changed;
}
