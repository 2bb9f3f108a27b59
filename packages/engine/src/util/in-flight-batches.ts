/**
 * Requests of items to one destination, at most `maxInFlight` at once: an item added while that many
 * are unanswered waits for one of them, and those waiting then leave together as the next request
 * (as group commit gathers statements). An idle destination's item leaves at once; a busy one costs
 * a request per batch instead of one per item. The remote worker's reports (runner/reporter.ts) and
 * the API's pushes (push/push-client.ts) go this way.
 */
export class InFlightBatches<T> {
  private readonly queue: T[] = [];
  private inFlight = 0;

  constructor(
    private readonly o: {
      maxInFlight: number;
      /** How many of the waiting items (from the first) the next request takes: at least one. */
      nextBatchSize: (waiting: readonly T[]) => number;
      /** Sends one item on its own, as the only one waiting; settles it, and never rejects. */
      alone: (item: T) => Promise<void>;
      /** Sends several in one request; settles every one of them, and never rejects. */
      together: (batch: T[]) => Promise<void>;
      /** Nothing is waiting or in flight any more. */
      onIdle?: () => void;
    },
  ) {}

  add(item: T): void {
    this.queue.push(item);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.o.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, Math.max(1, this.o.nextBatchSize(this.queue)));
      this.inFlight++;
      void (batch.length === 1 ? this.o.alone(batch[0] as T) : this.o.together(batch)).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0 && this.queue.length === 0) this.o.onIdle?.();
        else this.pump();
      });
    }
  }
}
