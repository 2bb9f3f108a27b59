import { describe, expect, it } from "vitest";
import { OneAtATime } from "./one-at-a-time.js";

/** A task that records when it starts and ends, and ends when told. */
function gate(log: string[], name: string) {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    open,
    task: async () => {
      log.push(`${name} start`);
      await opened;
      log.push(`${name} end`);
      return name;
    },
  };
}

describe("OneAtATime", () => {
  it("runs one key's tasks in order, one after the other, and other keys' side by side", async () => {
    const serial = new OneAtATime();
    const log: string[] = [];
    const a1 = gate(log, "a1");
    const a2 = gate(log, "a2");
    const b1 = gate(log, "b1");
    const results = [serial.run("a", a1.task), serial.run("a", a2.task), serial.run("b", b1.task)];
    await expect.poll(() => log).toEqual(["a1 start", "b1 start"]);
    a2.open();
    b1.open();
    await results[2];
    expect(log).not.toContain("a2 start");
    a1.open();
    expect(await Promise.all(results)).toEqual(["a1", "a2", "b1"]);
    expect(log.indexOf("a2 start")).toBeGreaterThan(log.indexOf("a1 end"));
  });

  it("a failed task fails its own caller only; the next one of its key still runs", async () => {
    const serial = new OneAtATime();
    const failed = serial.run("a", async () => {
      throw new Error("boom");
    });
    const next = serial.run("a", async () => "ran");
    await expect(failed).rejects.toThrow("boom");
    expect(await next).toBe("ran");
  });
});
