// A busy worker's reports against an HTTP server that answers as a Spool replica would: reports made
// while two are on their way leave together as one POST /internal/reports, and one of them the batch
// finds not found (its run pushed before its insert) goes again through its own route.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProtocolClient, ProtocolError } from "./protocol-client.js";
import { createReporter } from "./reporter.js";

describe("reporter", () => {
  let server: Server;
  let url = "";
  /** Calls seen, by path. */
  const calls = new Map<string, number>();
  /** Runs whose own route answers 404 this many more times before it stores the step. */
  const notInYet = new Map<string, number>();
  /** Answers held back until the test lets them go (the reports in flight). */
  let releaseHeld: () => void = () => {};
  let held = new Promise<void>((resolve) => {
    releaseHeld = resolve;
  });
  /** The execution ids of each batch, in order. */
  const batches: string[][] = [];

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const notFound = { error: "execution not found", error_type: "NOT_FOUND" };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      req.on("end", () => {
        const path = req.url ?? "";
        calls.set(path, (calls.get(path) ?? 0) + 1);
        if (path === "/internal/reports") {
          const { reports } = JSON.parse(text) as { reports: { execution_id: string }[] };
          batches.push(reports.map((r) => r.execution_id));
          answer(res, 200, {
            results: reports.map(({ execution_id: id }) =>
              notInYet.has(id) ? { status: 404, ...notFound } : { status: 200, body: { stored: id } },
            ),
          });
          return;
        }
        const id = decodeURIComponent(path.split("/")[3] ?? "");
        if (id.startsWith("held")) {
          void held.then(() => answer(res, 200, { stored: id }));
          return;
        }
        const left = notInYet.get(id) ?? 0;
        if (left > 0) {
          notInYet.set(id, left - 1);
          answer(res, 404, notFound);
          return;
        }
        answer(res, 200, { stored: id, alone: true });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A reporter with two reports in flight (held), so the next ones wait and leave as one batch. */
  const busyReporter = (tag: string) => {
    const api = createProtocolClient({ apiUrl: url, apiKey: "sk_test", projectId: "p", retryForMs: 10_000 });
    const reporter = createReporter({ api, workerId: () => "w" });
    held = new Promise<void>((resolve) => {
      releaseHeld = resolve;
    });
    const inFlight = [1, 2].map((n) => reporter.report(`held-${tag}-${n}`, "0.1", "step", { n }));
    return { reporter, inFlight };
  };

  it("a report the batch finds not found goes again alone, until its run is in, while it may still come", async () => {
    const { reporter, inFlight } = busyReporter("a");
    notInYet.set("late", 2);
    const ok = reporter.report("ok", "0.1", "step", { n: 3 });
    const late = reporter.report("late", "0.1", "step", { n: 4 }, () => true);
    releaseHeld();
    await Promise.all(inFlight);

    expect(await ok).toEqual({ stored: "ok" });
    // The batch's 404, then the own route's two 404s, then stored there.
    expect(await late).toEqual({ stored: "late", alone: true });
    expect(batches).toContainEqual(["ok", "late"]);
    expect(calls.get("/internal/executions/late/steps")).toBe(3);
  });

  it("a report the batch finds not found fails at once when its run cannot still come", async () => {
    const { reporter, inFlight } = busyReporter("b");
    notInYet.set("gone", 1);
    const ok = reporter.report("ok-b", "1.1", "step", { n: 3 });
    const gone = reporter.report("gone", "1.1", "step", { n: 4 });
    releaseHeld();
    await Promise.all(inFlight);

    expect(await ok).toEqual({ stored: "ok-b" });
    const err = await gone.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err).toMatchObject({ status: 404, errorType: "NOT_FOUND" });
    expect(batches).toContainEqual(["ok-b", "gone"]);
    expect(calls.get("/internal/executions/gone/steps")).toBeUndefined();
  });
});
