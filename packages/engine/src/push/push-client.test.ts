import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type PushRequest, SIGNATURE_HEADER, verifyPushSignature } from "@spool/shared";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type PushOutcome, PushSender } from "./push-client.js";

const SECRET = "push-secret-of-w-1";

/** A request the worker's address received: its path and the execution ids it pushed. */
interface Received {
  path: string;
  ids: string[];
  signed: boolean;
}

/**
 * A push worker's address: the answers to the first two `/execute` are held until the test lets
 * them go (so that the pushes sent meanwhile find two unanswered), later ones and `/execute-batch`
 * are answered at once (the batch as `batchAnswer` says); a run id with "busy" in it is answered
 * 429, with "old" the protocol's 400 mismatch, any other 200.
 */
describe("PushSender", () => {
  const received: Received[] = [];
  let held: (() => void)[] = [];
  let executes = 0;
  let onRequest: (() => void) | undefined;
  /** How `/execute-batch` is answered: each push's result (at once, or once the test lets it go), or a status. */
  let batchAnswer: "results" | "held results" | "no results" | 404 | 503 = "results";
  let heldBatches: (() => void)[] = [];
  let url = "";
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString();
    });
    req.on("end", () => {
      const body = JSON.parse(text) as PushRequest & { pushes?: PushRequest[] };
      const signature = req.headers[SIGNATURE_HEADER];
      received.push({
        path: req.url ?? "",
        ids: (body.pushes ?? [body]).map((p) => p.execution_id),
        signed: verifyPushSignature(SECRET, text, Array.isArray(signature) ? signature[0] : signature),
      });
      onRequest?.();
      if (req.url === "/execute") {
        const send = () => answer(res, ...asExecute(body));
        if (++executes <= 2) held.push(send);
        else send();
      } else if (batchAnswer === "results" || batchAnswer === "held results") {
        const results = (body.pushes ?? []).map((p) => {
          const [status, out] = asExecute(p);
          return { ...out, status };
        });
        if (batchAnswer === "results") answer(res, 200, { results });
        else heldBatches.push(() => answer(res, 200, { results }));
      } else if (batchAnswer === "no results") {
        answer(res, 200, { status: "ok" });
      } else {
        answer(res, batchAnswer, { error: "no" });
      }
    });
  });
  const asExecute = (p: PushRequest): [number, object] =>
    p.execution_id.includes("busy")
      ? [429, { error: "Worker at capacity" }]
      : p.execution_id.includes("old")
        ? [400, { error: "Worker ID mismatch" }]
        : [200, { status: "accepted", execution_id: p.execution_id }];
  const answer = (res: ServerResponse, status: number, body: object) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received.length = 0;
    held = [];
    executes = 0;
    batchAnswer = "results";
    heldBatches = [];
  });

  const worker = (capabilities: object) => ({
    id: "w-1",
    pushEndpointUrl: url,
    pushSecret: SECRET,
    capabilities,
  });
  const push = (id: string) => ({ worker_id: "w-1", execution_id: id, workflow_id: "wf" }) as PushRequest;
  const requests = (n: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (received.length >= n) {
          onRequest = undefined;
          resolve();
        }
      };
      onRequest = check;
      check();
    });
  /** Sends pushes of these ids at once; once the first two are held, lets their answers go. */
  const sendAll = async (
    target: object,
    ids: string[],
    sender = new PushSender(),
  ): Promise<PushOutcome[]> => {
    const outcomes = Promise.all(ids.map((id) => sender.send(worker(target), push(id), 5000)));
    await requests(2);
    for (const release of held.splice(0)) release();
    return outcomes;
  };
  /** The requests received, the first two (sent together, on two connections) in id order. */
  const inOrder = () => [
    ...received.slice(0, 2).sort((a, b) => a.ids[0]!.localeCompare(b.ids[0]!)),
    ...received.slice(2),
  ];

  it("sends pushes made while two are unanswered together, each settled by its own result", async () => {
    const outcomes = await sendAll({ spool_push_batches: true }, [
      "e1",
      "e2",
      "e3",
      "e4-busy",
      "e5-old",
      "e6",
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual([
      "accepted",
      "accepted",
      "accepted",
      "busy",
      "mismatch",
      "accepted",
    ]);
    expect(inOrder()).toEqual([
      { path: "/execute", ids: ["e1"], signed: true },
      { path: "/execute", ids: ["e2"], signed: true },
      { path: "/execute-batch", ids: ["e3", "e4-busy", "e5-old", "e6"], signed: true },
    ]);
  });

  it("sends each push alone to a worker that does not take batches", async () => {
    const outcomes = await sendAll({}, ["e1", "e2", "e3-busy", "e4"]);
    expect(outcomes.map((o) => o.kind)).toEqual(["accepted", "accepted", "busy", "accepted"]);
    expect(received.map((r) => r.path)).toEqual(["/execute", "/execute", "/execute", "/execute"]);
  });

  it("sends each push of a batch alone when the address has no batch route, and every push after", async () => {
    batchAnswer = 404;
    const sender = new PushSender();
    const outcomes = await sendAll({ spool_push_batches: true }, ["e1", "e2", "e3", "e4-busy"], sender);
    expect(outcomes.map((o) => o.kind)).toEqual(["accepted", "accepted", "accepted", "busy"]);
    expect(inOrder().map((r) => `${r.path} ${r.ids.join(",")}`)).toEqual([
      "/execute e1",
      "/execute e2",
      "/execute-batch e3,e4-busy",
      expect.stringMatching(/^\/execute e(3|4-busy)$/),
      expect.stringMatching(/^\/execute e(3|4-busy)$/),
    ]);
    received.length = 0;
    executes = 0;
    const later = await sendAll({ spool_push_batches: true }, ["e5", "e6", "e7", "e8"], sender);
    expect(later.map((o) => o.kind)).toEqual(["accepted", "accepted", "accepted", "accepted"]);
    expect(received.map((r) => r.path)).toEqual(["/execute", "/execute", "/execute", "/execute"]);
  });

  it("fails a push of a batch at its own deadline, and settles the others by the batch's answer", async () => {
    batchAnswer = "held results";
    const sender = new PushSender();
    const target = worker({ spool_push_batches: true });
    const send = (id: string, timeoutMs: number) => sender.send(target, push(id), timeoutMs);
    const [e1, e2, e3, e4] = [send("e1", 5000), send("e2", 5000), send("e3", 200), send("e4", 5000)];
    await requests(2);
    for (const release of held.splice(0)) release();
    // e3's timeout passes while the batch's answer is held (or, on a slow host, before it leaves).
    expect(await e3).toMatchObject({ kind: "failed" });
    await requests(3);
    for (const release of heldBatches.splice(0)) release();
    expect((await Promise.all([e1, e2, e4])).map((o) => o.kind)).toEqual([
      "accepted",
      "accepted",
      "accepted",
    ]);
  });

  it("fails a push whose timeout passed while it waited behind unanswered ones, without sending it", async () => {
    const sender = new PushSender();
    const target = worker({ spool_push_batches: true });
    const outcomes = Promise.all([
      sender.send(target, push("e1"), 300),
      sender.send(target, push("e2"), 300),
      sender.send(target, push("e3"), 100),
    ]);
    await requests(2);
    // The first two are never answered: they time out, and only then is there room for the third.
    const [first, , third] = await outcomes;
    expect(first).toMatchObject({ kind: "failed", reason: expect.stringContaining("no answer") });
    expect(third).toEqual({
      kind: "failed",
      reason: "its timeout passed while earlier pushes were unanswered",
    });
    expect(received.map((r) => r.ids[0]).sort()).toEqual(["e1", "e2"]);
  });

  it("fails every push of a batch the worker answered 5xx, as one failed request", async () => {
    batchAnswer = 503;
    const outcomes = await sendAll({ spool_push_batches: true }, ["e1", "e2", "e3", "e4"]);
    expect(outcomes.map((o) => o.kind)).toEqual(["accepted", "accepted", "failed", "failed"]);
    expect(outcomes[2]).toMatchObject({ reason: expect.stringContaining("HTTP 503") });
    // One request: the dispatcher counts it against the worker once.
    const [, , third, fourth] = outcomes as { request?: object }[];
    expect(third?.request).toBeDefined();
    expect(third?.request).toBe(fourth?.request);
  });

  it("fails every push of a batch whose 2xx answer has no result per push", async () => {
    batchAnswer = "no results";
    const outcomes = await sendAll({ spool_push_batches: true }, ["e1", "e2", "e3", "e4"]);
    expect(outcomes.map((o) => o.kind)).toEqual(["accepted", "accepted", "failed", "failed"]);
    expect(outcomes[3]).toMatchObject({ reason: expect.stringContaining("without a result per push") });
  });
});
