// The worker's protocol client against an HTTP server that answers as a Spool replica would: a 404
// is final, unless the caller says the run may still be on its way (pushed before its insert).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProtocolClient, ProtocolError } from "./protocol-client.js";

describe("protocol client", () => {
  let server: Server;
  let url = "";
  /** Per path: how many calls are answered 404 before one is answered 200, and the calls seen. */
  const notFoundFirst = new Map<string, { left: number; calls: number }>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const state = notFoundFirst.get(req.url ?? "") ?? { left: Number.POSITIVE_INFINITY, calls: 0 };
      state.calls++;
      const found = state.left-- <= 0;
      res.writeHead(found ? 200 : 404, { "content-type": "application/json" });
      res.end(
        JSON.stringify(found ? { ok: true } : { error: "execution not found", error_type: "NOT_FOUND" }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const client = () =>
    createProtocolClient({ apiUrl: url, apiKey: "sk_test", projectId: "p", retryForMs: 10_000 });

  it("a 404 is final by default", async () => {
    notFoundFirst.set("/a", { left: 1, calls: 0 });
    await expect(client().request("POST", "/a", {})).rejects.toMatchObject({ status: 404 });
    expect(notFoundFirst.get("/a")?.calls).toBe(1);
  });

  it("a 404 is made again while retryNotFound holds, until the run is found", async () => {
    notFoundFirst.set("/b", { left: 2, calls: 0 });
    const answer = await client().request("POST", "/b", {}, {}, { retryNotFound: () => true });
    expect(answer).toEqual({ ok: true });
    expect(notFoundFirst.get("/b")?.calls).toBe(3);
  });

  it("stops making it again once retryNotFound no longer holds (the run was cancelled)", async () => {
    notFoundFirst.set("/c", { left: 100, calls: 0 });
    let cancelled = false;
    const call = client().request(
      "POST",
      "/c",
      {},
      {},
      {
        retryNotFound: () => {
          // Cancelled while the second answer is on its way.
          if (notFoundFirst.get("/c")!.calls >= 2) cancelled = true;
          return !cancelled;
        },
      },
    );
    const err = await call.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect(err).toMatchObject({ status: 404 });
    expect(notFoundFirst.get("/c")?.calls).toBe(2);
  });
});
