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
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffer.length > 0) {
      const batch = buffer;
      buffer = [];
      chain = chain.then(() => write(batch).then(() => undefined, onError));
    }
    return chain;
  };
  return {
    add(item: T) {
      buffer.push(item);
      timer ??= setTimeout(() => void flush(), intervalMs);
    },
    /** Writes what is buffered and waits for every batch so far. */
    flush,
  };
}
