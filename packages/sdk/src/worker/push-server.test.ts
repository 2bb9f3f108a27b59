import type { Server } from "node:http";
import { type PushRequest, signPush } from "@spool/shared";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPushServer, listen } from "./push-server.js";

const SECRET = "s3cret-key-of-this-worker";

describe("the push endpoint of createWorker", () => {
  let server: Server;
  let url = "";
  let room = true;
  /** Runs it takes in all before it is full. */
  let capacity = Number.POSITIVE_INFINITY;
  const accepted: PushRequest[] = [];
  const running = new Set(["running-run"]);

  beforeAll(async () => {
    server = createPushServer({
      workerId: () => "w-1",
      secret: () => SECRET,
      hasRoom: () => room && accepted.length < capacity,
      running: (push) => push.execution_id === "e-taken" && push.spool_claim === "3.1",
      accept: (push) => accepted.push(push),
      cancel: (id) => running.delete(id),
      health: () => ({ status: "healthy", mode: "push" }),
    });
    url = `http://127.0.0.1:${await listen(server, 0, "127.0.0.1")}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const push = (body: object, headers: Record<string, string> = {}, path = "/execute") => {
    const text = JSON.stringify(body);
    return fetch(`${url}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-spool-signature": signPush(SECRET, text),
        ...headers,
      },
      body: text,
    });
  };
  const body = { worker_id: "w-1", execution_id: "e-1", workflow_id: "wf" };

  it("takes a push Spool signed and answers at once", async () => {
    const res = await push(body);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "accepted", execution_id: "e-1" });
    expect(accepted.map((p) => p.execution_id)).toEqual(["e-1"]);
  });

  it("refuses a push without Spool's signature, or signed with another key or long ago", async () => {
    for (const signature of [
      "",
      signPush("another key", JSON.stringify(body)),
      signPush(SECRET, JSON.stringify(body), Date.now() - 3_600_000),
    ]) {
      const res = await push(body, { "x-spool-signature": signature });
      expect(res.status).toBe(401);
    }
    expect(accepted).toHaveLength(1);
  });

  it("answers the protocol's errors: 400 mismatch or not JSON, 429 when full", async () => {
    expect((await push({ ...body, worker_id: "w-old" })).status).toBe(400);
    const text = await (await push({ ...body, worker_id: "w-old" })).json();
    expect(text).toEqual({ error: "Worker ID mismatch" });
    const notJson = await fetch(`${url}/execute`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "x",
    });
    expect(notJson.status).toBe(400);
    room = false;
    expect((await push(body)).status).toBe(429);
    room = true;
  });

  it("answers a push it runs already 200 without starting it again, even when full", async () => {
    room = false;
    const again = await push({ ...body, execution_id: "e-taken", spool_claim: "3.1" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ status: "accepted", execution_id: "e-taken" });
    // The same run under a newer claim is a new start of it: full, so 429.
    expect((await push({ ...body, execution_id: "e-taken", spool_claim: "4.2" })).status).toBe(429);
    room = true;
    expect(accepted.map((p) => p.execution_id)).toEqual(["e-1"]);
  });

  it("takes several pushes in one signed /execute-batch, each answered as /execute would answer it", async () => {
    const batch = (pushes: unknown[], headers: Record<string, string> = {}) =>
      push({ pushes }, headers, "/execute-batch");
    const before = accepted.length;
    capacity = before + 1;
    const res = await batch([
      { ...body, execution_id: "e-b1" },
      { ...body, execution_id: "e-b2", worker_id: "w-old" },
      { ...body, execution_id: "e-taken", spool_claim: "3.1" },
      { ...body, execution_id: "e-b3" },
      { worker_id: "w-1" },
    ]);
    capacity = Number.POSITIVE_INFINITY;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      results: [
        { status: 200, execution_id: "e-b1" },
        { status: 400, error: "Worker ID mismatch" },
        { status: 200, execution_id: "e-taken" },
        { status: 429, error: "Worker at capacity" },
        { status: 400, error: "not a push: execution_id, workflow_id and worker_id are required" },
      ],
    });
    expect(accepted.slice(before).map((p) => p.execution_id)).toEqual(["e-b1"]);

    // Refused whole, nothing taken: unsigned, no pushes, too many.
    const pushes = [{ ...body, execution_id: "e-b4" }];
    expect((await batch(pushes, { "x-spool-signature": "" })).status).toBe(401);
    expect((await batch([])).status).toBe(400);
    expect((await batch(Array.from({ length: 65 }, () => pushes[0]))).status).toBe(400);
    expect(accepted.slice(before).map((p) => p.execution_id)).toEqual(["e-b1"]);
  });

  it("cancels a run it runs (200) and not one it does not (404); health answers", async () => {
    const cancel = (id: string, named = id) => {
      const body = JSON.stringify({ execution_id: named });
      return fetch(`${url}/cancel/${id}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-worker-id": "w-1",
          "x-spool-signature": signPush(SECRET, body),
        },
        body,
      });
    };
    // A cancel signed for one run cannot be replayed against another.
    expect((await cancel("running-run", "another-run")).status).toBe(401);
    expect((await cancel("running-run")).status).toBe(200);
    expect((await cancel("running-run")).status).toBe(404);
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: "healthy", mode: "push" });
  });
});
