import { describe, expect, it } from "vitest";
import { InRounds } from "./in-rounds.js";

/** A `send` that records each round and answers it when told (failing the items named). */
function rounds() {
  const sent: string[][] = [];
  const answers: ((fail?: string[]) => void)[] = [];
  const send = (items: string[]) => {
    sent.push(items);
    const outcomes = items.map(() => {
      const o = {} as { promise: Promise<string>; resolve(v: string): void; reject(e: Error): void };
      o.promise = new Promise<string>((resolve, reject) => Object.assign(o, { resolve, reject }));
      return o;
    });
    answers.push((fail = []) => {
      items.forEach((item, i) => {
        if (fail.includes(item)) outcomes[i]?.reject(new Error(`${item} failed`));
        else outcomes[i]?.resolve(`${item}!`);
      });
    });
    return outcomes.map((o) => o.promise);
  };
  return { sent, answer: (round: number, fail?: string[]) => answers[round]?.(fail), send };
}

describe("InRounds", () => {
  it("sends what is asked for in one turn together, and what comes during a round as the next", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 10);
    const [a1, a2] = [inRounds.run("a", "a1"), inRounds.run("a", "a2")];
    const b1 = inRounds.run("b", "b1");
    await expect.poll(() => r.sent).toEqual([["a1", "a2"], ["b1"]]);
    const a3 = inRounds.run("a", "a3");
    const a4 = inRounds.run("a", "a4");
    r.answer(1);
    expect(await b1).toBe("b1!");
    expect(r.sent).toHaveLength(2);
    r.answer(0);
    expect(await Promise.all([a1, a2])).toEqual(["a1!", "a2!"]);
    await expect.poll(() => r.sent).toEqual([["a1", "a2"], ["b1"], ["a3", "a4"]]);
    r.answer(2);
    expect(await Promise.all([a3, a4])).toEqual(["a3!", "a4!"]);
    // The key is idle again: the next item goes in a round of its own.
    const a5 = inRounds.run("a", "a5");
    await expect.poll(() => r.sent.at(-1)).toEqual(["a5"]);
    r.answer(3);
    expect(await a5).toBe("a5!");
  });

  it("callers answered together by one round go on together into the next batcher's round", async () => {
    const first = rounds();
    const second = rounds();
    const before = new InRounds(first.send, 16);
    const after = new InRounds(second.send, 16);
    const items = Array.from({ length: 16 }, (_, i) => `j${i}`);
    const done = items.map(async (item) => {
      await before.run("k", item);
      return after.run("k", item);
    });
    await expect.poll(() => first.sent.length).toBe(1);
    first.answer(0);
    await expect.poll(() => second.sent.length).toBe(1);
    expect(second.sent).toEqual([items]);
    second.answer(0);
    expect(await Promise.all(done)).toEqual(items.map((i) => `${i}!`));
  });

  it("sends at most maxPerRound items in a round; the rest go in the rounds after, in order", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 2);
    const all = ["x1", "x2", "x3", "x4", "x5", "x6"].map((i) => inRounds.run("x", i));
    await expect.poll(() => r.sent.length).toBe(1);
    r.answer(0);
    await expect.poll(() => r.sent.length).toBe(2);
    r.answer(1);
    await expect.poll(() => r.sent.length).toBe(3);
    r.answer(2);
    expect(await Promise.all(all)).toEqual(["x1!", "x2!", "x3!", "x4!", "x5!", "x6!"]);
    expect(r.sent).toEqual([
      ["x1", "x2"],
      ["x3", "x4"],
      ["x5", "x6"],
    ]);
  });

  it("an item that fails fails its own caller only; the next round still goes", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 10);
    const first = inRounds.run("a", "a1");
    await expect.poll(() => r.sent.length).toBe(1);
    const [second, third] = [inRounds.run("a", "a2"), inRounds.run("a", "a3")];
    r.answer(0, ["a1"]);
    await expect(first).rejects.toThrow("a1 failed");
    await expect.poll(() => r.sent).toEqual([["a1"], ["a2", "a3"]]);
    r.answer(1, ["a2"]);
    await expect(second).rejects.toThrow("a2 failed");
    expect(await third).toBe("a3!");
  });

  it("a send that throws fails its round's items; the next round still goes", async () => {
    const sent: string[][] = [];
    const inRounds = new InRounds((items: string[]) => {
      sent.push(items);
      if (sent.length === 1) throw new Error("boom");
      return items.map((i) => Promise.resolve(i));
    }, 10);
    const first = inRounds.run("a", "a1");
    const alsoFirst = inRounds.run("a", "a2");
    await expect(first).rejects.toThrow("boom");
    await expect(alsoFirst).rejects.toThrow("boom");
    expect(await inRounds.run("a", "a3")).toBe("a3");
    expect(sent).toEqual([["a1", "a2"], ["a3"]]);
  });
});
