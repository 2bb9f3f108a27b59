import { QUEUE_BRAND, type QueueDefinition } from "@spool/shared";

/**
 * Declares a queue and its concurrency limit; export it from the workflows module and the worker
 * registers it. The limit holds across all worker replicas.
 */
export function defineQueue(options: { name: string; concurrencyLimit?: number | null }): QueueDefinition {
  const limit = options.concurrencyLimit ?? null;
  if (limit !== null && (!Number.isInteger(limit) || limit < 1)) {
    throw new TypeError(`queue '${options.name}': concurrencyLimit must be a whole number >= 1`);
  }
  return Object.freeze({ [QUEUE_BRAND]: true as const, name: options.name, concurrencyLimit: limit });
}
