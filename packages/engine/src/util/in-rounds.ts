/**
 * Sends items in rounds per key: an item asked for while no round of its key is under way goes at
 * once, in a round of its own; items asked for during a round wait for it to end and then go
 * together, in the order they were asked for, as the next round (`maxPerRound` at most; the rest
 * wait for the round after). Keys do not wait for each other. `send` answers each item of a round
 * with a promise of its own, in their order (if it throws, every item of the round fails with its
 * error); the round ends when every answer has settled.
 */
export class InRounds<I, O> {
  /** Per key with a round under way: the items for the next one. */
  private readonly waiting = new Map<string, Waiting<I, O>[]>();

  constructor(
    private readonly send: (items: I[]) => Promise<O>[],
    private readonly maxPerRound: number,
  ) {}

  run(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const next = this.waiting.get(key);
      if (next) next.push({ item, resolve, reject });
      else this.round(key, [{ item, resolve, reject }]);
    });
  }

  private round(key: string, items: Waiting<I, O>[]): void {
    if (!this.waiting.has(key)) this.waiting.set(key, []);
    let answers: Promise<O>[];
    try {
      answers = this.send(items.map((w) => w.item));
    } catch (err) {
      answers = items.map(() => Promise.reject(err));
    }
    const settled = items.map((w, i) =>
      (answers[i] ?? Promise.reject(new Error("no answer"))).then(w.resolve, w.reject),
    );
    void Promise.all(settled).then(() => {
      const queued = this.waiting.get(key) ?? [];
      if (queued.length === 0) this.waiting.delete(key);
      // The rest stay queued for the round after.
      else this.round(key, queued.splice(0, this.maxPerRound));
    });
  }
}

interface Waiting<I, O> {
  item: I;
  resolve(result: O): void;
  reject(error: unknown): void;
}
