import { type Engine, eventsChannel, type PublishedEvent } from "@spool/engine";
import type { Logger } from "@spool/shared";
import { type Redis, Redis as RedisClient } from "ioredis";
import { logFailure } from "../errors.js";

type Listener = (events: PublishedEvent[]) => void;

interface TopicFeed {
  projectId: string;
  topic: string;
  /** Highest sequence this process has fetched and handed to listeners. */
  cursor: number;
  listeners: Set<Listener>;
  fetching: Promise<void> | null;
  again: boolean;
}

/**
 * Live events for SSE streams, one feed per (project, topic) per API process. A publish (on any
 * replica) is announced on Redis; the feed then reads the committed events after its cursor from
 * Postgres with one query, however many connections listen. Reading from Postgres rather than
 * trusting the announcement keeps order and completeness: sequences are assigned in commit order,
 * so "everything after my cursor" never skips an event whose announcement arrived late. A slow
 * safety poll (one query per project) covers announcements lost while Redis was away.
 */
export class EventHub {
  private readonly feeds = new Map<string, TopicFeed>();
  private readonly poll: NodeJS.Timeout;

  constructor(
    private readonly engine: Engine,
    private readonly subscriber: Redis,
    private readonly logger: Logger,
    safetyPollMs = 5000,
  ) {
    subscriber.on("message", (channel: string) => {
      const feed = this.feeds.get(channel);
      if (feed) void this.fetch(feed);
    });
    this.poll = setInterval(() => void this.safetyPoll(), safetyPollMs);
    this.poll.unref();
  }

  /** Starts delivering events published from now on; returns the unsubscribe function. */
  async subscribe(projectId: string, topic: string, listener: Listener): Promise<() => void> {
    const channel = eventsChannel(projectId, topic);
    let feed = this.feeds.get(channel);
    let created = false;
    if (!feed) {
      // The cursor is read before the feed becomes visible: a poll or announcement meanwhile would
      // otherwise page through the topic's whole history.
      const cursor = await this.engine.events.latestSequence(projectId, topic);
      feed = this.feeds.get(channel);
      if (!feed) {
        feed = { projectId, topic, cursor, listeners: new Set(), fetching: null, again: false };
        this.feeds.set(channel, feed);
        created = true;
      }
    }
    // Listen before awaiting Redis: another listener leaving meanwhile must not drop this feed.
    const subscribed = feed;
    subscribed.listeners.add(listener);
    const unsubscribe = () => {
      subscribed.listeners.delete(listener);
      if (subscribed.listeners.size === 0 && this.feeds.get(channel) === subscribed) {
        this.feeds.delete(channel);
        void this.subscriber.unsubscribe(channel).catch(() => {});
      }
    };
    if (created) {
      await this.subscriber.subscribe(channel).catch((err: Error) => {
        this.logger.warn(
          { err: err.message },
          "live event subscription failed; streams fall back to polling",
        );
      });
    }
    return unsubscribe;
  }

  /** Listeners currently subscribed, over all feeds (read-only; for tests and diagnostics). */
  get listenerCount(): number {
    let n = 0;
    for (const feed of this.feeds.values()) n += feed.listeners.size;
    return n;
  }

  /**
   * For announcements lost while Redis was away: one query per project (however many topics its
   * streams follow) finds the topics with events past their feed's cursor, and only those fetch.
   */
  private async safetyPoll(): Promise<void> {
    const byProject = new Map<string, TopicFeed[]>();
    for (const feed of this.feeds.values()) {
      const feeds = byProject.get(feed.projectId) ?? [];
      feeds.push(feed);
      byProject.set(feed.projectId, feeds);
    }
    for (const [projectId, feeds] of byProject) {
      try {
        const latest = await this.engine.events.latestSequences(
          projectId,
          feeds.map((f) => f.topic),
        );
        for (const feed of feeds) if ((latest.get(feed.topic) ?? 0) > feed.cursor) void this.fetch(feed);
      } catch (err) {
        logFailure(this.logger, err, { project_id: projectId, during: "event feed poll" });
      }
    }
  }

  /** One fetch at a time per feed; announcements arriving meanwhile trigger one more round. */
  private fetch(feed: TopicFeed): Promise<void> {
    if (feed.fetching) {
      feed.again = true;
      return feed.fetching;
    }
    feed.fetching = (async () => {
      try {
        do {
          feed.again = false;
          for (;;) {
            const page = await this.engine.events.history(feed.projectId, feed.topic, feed.cursor, 500);
            if (page.events.length === 0) break;
            feed.cursor = page.nextSequenceId;
            for (const l of feed.listeners) l(page.events);
            if (!page.hasMore) break;
          }
        } while (feed.again);
      } catch (err) {
        // An outage is a warning (the safety poll retries); anything else is a bug.
        logFailure(this.logger, err, { topic: feed.topic, during: "event feed fetch" });
      } finally {
        feed.fetching = null;
      }
    })();
    return feed.fetching;
  }

  async close(): Promise<void> {
    clearInterval(this.poll);
    this.feeds.clear();
    this.subscriber.disconnect();
  }
}

/** The hub with its own subscriber connection (a subscribed ioredis connection can do nothing else). */
export function createEventHub(engine: Engine, redisUrl: string, logger: Logger): EventHub {
  const subscriber = new RedisClient(redisUrl, { maxRetriesPerRequest: null, lazyConnect: false });
  subscriber.on("error", (err) => logger.debug({ err: err.message }, "event subscriber connection error"));
  return new EventHub(engine, subscriber, logger);
}
