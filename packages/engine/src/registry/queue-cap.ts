import type { Db } from "@spool/db";
import { conflict } from "@spool/shared";

/** Queues a project may define unless the engine is told otherwise (SPOOL_MAX_QUEUES_PER_PROJECT). */
export const DEFAULT_MAX_QUEUES_PER_PROJECT = 1000;

/**
 * Refuses (409) to give a project more than `max` queues. Queues are per-project resources that
 * every sweep revisits, and their names come from clients, so one key must not be able to make
 * them unbounded. Names the project already has never count twice.
 */
export async function assertRoomForQueues(
  db: Db,
  projectId: string,
  names: string[],
  max: number,
): Promise<void> {
  const wanted = [...new Set(names)];
  if (wanted.length === 0) return;
  const [existing, known] = await Promise.all([
    db.queue.count({ where: { projectId } }),
    db.queue.count({ where: { projectId, name: { in: wanted } } }),
  ]);
  const added = wanted.length - known;
  if (added > 0 && existing + added > max) {
    throw conflict(
      `the project has ${existing} queues; ${added} more would pass its limit of ${max} (SPOOL_MAX_QUEUES_PER_PROJECT)`,
      { queues: existing, limit: max },
    );
  }
}
