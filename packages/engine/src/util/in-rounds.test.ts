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
  it("sends an item at once when its key is idle, and what comes meanwhile as the next round", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 10);
    const a1 = inRounds.run("a", "a1");
    const a2 = inRounds.run("a", "a2");
    const a3 = inRounds.run("a", "a3");
    const b1 = inRounds.run("b", "b1");
    expect(r.sent).toEqual([["a1"], ["b1"]]);
    r.answer(1);
    expect(await b1).toBe("b1!");
    expect(r.sent).toHaveLength(2);
    r.answer(0);
    expect(await a1).toBe("a1!");
    await expect.poll(() => r.sent).toEqual([["a1"], ["b1"], ["a2", "a3"]]);
    r.answer(2);
    expect(await Promise.all([a2, a3])).toEqual(["a2!", "a3!"]);
    // The key is idle again: the next item goes in a round of its own.
    const a4 = inRounds.run("a", "a4");
    await expect.poll(() => r.sent.at(-1)).toEqual(["a4"]);
    r.answer(3);
    expect(await a4).toBe("a4!");
  });

  it("sends at most maxPerRound items in a round; the rest go in the rounds after, in order", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 2);
    const all = ["x1", "x2", "x3", "x4", "x5", "x6"].map((i) => inRounds.run("x", i));
    r.answer(0);
    await expect.poll(() => r.sent.length).toBe(2);
    r.answer(1);
    await expect.poll(() => r.sent.length).toBe(3);
    r.answer(2);
    await expect.poll(() => r.sent.length).toBe(4);
    r.answer(3);
    expect(await Promise.all(all)).toEqual(["x1!", "x2!", "x3!", "x4!", "x5!", "x6!"]);
    expect(r.sent).toEqual([["x1"], ["x2", "x3"], ["x4", "x5"], ["x6"]]);
  });

  it("an item that fails fails its own caller only; the next round still goes", async () => {
    const r = rounds();
    const inRounds = new InRounds(r.send, 10);
    const first = inRounds.run("a", "a1");
    const [second, third] = [inRounds.run("a", "a2"), inRounds.run("a", "a3")];
    r.answer(0, ["a1"]);
    await expect(first).rejects.toThrow("a1 failed");
    await expect.poll(() => r.sent.length).toBe(2);
    r.answer(1, ["a2"]);
    await expect(second).rejects.toThrow("a2 failed");
    expect(await third).toBe("a3!");
  });

  it("a send that throws fails its round's items; the next round still goes", async () => {
    let calls = 0;
    const inRounds = new InRounds((items: string[]) => {
      if (calls++ === 0) throw new Error("boom");
      return items.map((i) => Promise.resolve(i));
    }, 10);
    const first = inRounds.run("a", "a1");
    const second = inRounds.run("a", "a2");
    await expect(first).rejects.toThrow("boom");
    expect(await second).toBe("a2");
  });
});
