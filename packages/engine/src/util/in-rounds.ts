/**
 * Sends items in rounds per key: the items asked for in one turn of the event loop while no round
 * of their key is under way go together, at the end of that turn (so callers answered together by
 * an earlier round stay together); items asked for during a round wait for it to end and then go
 * together, in the order they were asked for, as the next round (`maxPerRound` at most; the rest
 * wait for the round after). Keys do not wait for each other. `send` answers each item of a round
 * with a promise of its own, in their order (if it throws, every item of the round fails with its
 * error); the round ends when every answer has settled.
 */
export class InRounds<I, O> {
  /** Per key with a round scheduled or under way: the items for the next one. */
  private readonly waiting = new Map<string, Waiting<I, O>[]>();

  constructor(
    private readonly send: (items: I[]) => Promise<O>[],
    private readonly maxPerRound: number,
  ) {}

  run(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queued = this.waiting.get(key);
      if (queued) {
        queued.push({ item, resolve, reject });
        return;
      }
      this.waiting.set(key, [{ item, resolve, reject }]);
      queueMicrotask(() => this.round(key));
    });
  }

  private round(key: string): void {
    const queued = this.waiting.get(key) ?? [];
    if (queued.length === 0) {
      this.waiting.delete(key);
      return;
    }
    // The rest stay queued for the round after.
    const items = queued.splice(0, this.maxPerRound);
    let answers: Promise<O>[];
    try {
      answers = this.send(items.map((w) => w.item));
    } catch (err) {
      answers = items.map(() => Promise.reject(err));
    }
    const settled = items.map((w, i) =>
      (answers[i] ?? Promise.reject(new Error("no answer"))).then(w.resolve, w.reject),
    );
    void Promise.all(settled).then(() => this.round(key));
  }
}

interface Waiting<I, O> {
  item: I;
  resolve(result: O): void;
  reject(error: unknown): void;
}
