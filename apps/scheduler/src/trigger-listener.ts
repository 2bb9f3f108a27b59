import { type Engine, PUBLISH_CHANNEL } from "@spool/engine";
import type { Logger } from "@spool/shared";
import type { Redis } from "ioredis";

/**
 * Fires full batches the moment their last event is published: every publish is announced on
 * Redis, and the triggers of that topic are checked at once (one check at a time per topic; a
 * burst of announcements collapses into one more round). `published` hears of each publish too
 * (a partial batch may have begun: its timeout is a new due time).
 */
export function listenForPublishes(
  engine: Engine,
  subscriber: Redis,
  logger: Logger,
  published: () => void,
): { subscribed: Promise<void>; stop: () => Promise<void> } {
  const running = new Map<string, { again: boolean; done: Promise<void> }>();
  const check = (projectId: string, topic: string) => {
    const key = `${projectId}\n${topic}`;
    const current = running.get(key);
    if (current) {
      current.again = true;
      return;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await engine.triggerFiring.fireForTopic(projectId, topic);
        } while (entry.again);
      } catch (err) {
        logger.warn({ err: String(err), topic }, "trigger check failed; the periodic check will retry");
      } finally {
        running.delete(key);
      }
    })();
    running.set(key, entry);
  };
  subscriber.on("message", (channel: string, message: string) => {
    if (channel !== PUBLISH_CHANNEL) return;
    published();
    try {
      const { projectId, topic } = JSON.parse(message) as { projectId: string; topic: string };
      check(projectId, topic);
    } catch {
      logger.warn("malformed publish announcement");
    }
  });
  return {
    // Not awaited at start-up: with Redis away the subscription waits for it to return.
    subscribed: subscriber.subscribe(PUBLISH_CHANNEL).then(() => {}),
    async stop() {
      await Promise.allSettled([...running.values()].map((r) => r.done));
      subscriber.disconnect();
    },
  };
}
