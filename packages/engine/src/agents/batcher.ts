/**
 * Collects items and hands them over in batches: at most every `intervalMs`, one batch at a time and
 * in order. An LLM streams one delta per token; one database transaction per token would cost more
 * than the call itself.
 */
export function createBatcher<T>(
  intervalMs: number,
  write: (items: T[]) => Promise<unknown>,
  onError: (err: unknown) => void,
) {
  let buffer: T[] = [];
  // Settles when the batch now being collected has been handed to `write`.
  let written: { promise: Promise<void>; resolve: () => void } | null = null;
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffer.length > 0) {
      const batch = buffer;
      const done = written;
      buffer = [];
      written = null;
      chain = chain.then(() => write(batch).then(() => undefined, onError)).then(done?.resolve);
    }
    return chain;
  };
  return {
    /**
     * Buffers an item. The promise settles (never rejects: failures go to `onError`) once the
     * item's batch was written, so a caller that must not lose it can await it.
     */
    add(item: T): Promise<void> {
      buffer.push(item);
      if (!written) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => {
          resolve = () => r();
        });
        written = { promise, resolve };
      }
      timer ??= setTimeout(() => void flush(), intervalMs);
      return written.promise;
    },
    /** Writes what is buffered and waits for every batch so far. */
    flush,
    /**
     * Hands over what is buffered instead of writing it (once every earlier batch is written), for a
     * caller that writes it in a transaction of its own; `written()` settles those items' add().
     */
    async take(): Promise<{ items: T[]; written: () => void }> {
      if (timer) clearTimeout(timer);
      timer = null;
      const items = buffer;
      const done = written;
      buffer = [];
      written = null;
      await chain;
      return { items, written: () => done?.resolve() };
    },
  };
}
