// What a client sees at the edges of HTTP itself, on the real server the API process runs.
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen } from "../src/server.js";
import { createTestApi } from "./harness.js";

const api = createTestApi({ maxBodyBytes: 64 * 1024 });

interface Answer {
  status: number;
  body: unknown;
}

function send(port: number, o: { headers?: Record<string, string>; body?: Buffer; chunked?: boolean }) {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, method: "POST", path: "/api/v1/events/publish", headers: o.headers },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
      },
    );
    req.on("error", reject);
    if (o.body) {
      // In pieces, as a large upload arrives: the answer may come before the last piece is sent.
      for (let i = 0; i < o.body.length; i += 64 * 1024) req.write(o.body.subarray(i, i + 64 * 1024));
    }
    req.end();
  });
}

describe("HTTP edges", () => {
  let port = 0;
  let close = () => {};
  let p: { projectId: string; key: string };
  beforeAll(async () => {
    p = await api.createProject();
    // The same server set-up main.ts uses, over the harness's app.
    const server = listen(api.app, { port: 0, hostname: "127.0.0.1" }, () => {});
    await new Promise<void>((resolve) => server.once("listening", resolve));
    port = (server.address() as AddressInfo).port;
    close = () => server.close();
  });
  afterAll(() => close());

  it("headers over Node's limit get 431 with the contract's JSON body", async () => {
    const res = await send(port, { headers: { "x-padding": "a".repeat(20 * 1024) } });
    expect(res).toMatchObject({ status: 431, body: { error_type: "BAD_REQUEST" } });
  });

  it("an upload far over the body limit gets a readable 413, whether it declares its length or not", async () => {
    const headers = {
      authorization: `Bearer ${p.key}`,
      "x-project-id": p.projectId,
      "content-type": "application/json",
    };
    const body = Buffer.from(JSON.stringify({ topic: "t", data: { pad: "x".repeat(5 * 1024 * 1024) } }));
    for (const declared of [true, false]) {
      const res = await send(port, {
        headers: declared
          ? { ...headers, "content-length": String(body.length) }
          : { ...headers, "transfer-encoding": "chunked" },
        body,
      });
      expect(res, `declared: ${declared}`).toMatchObject({
        status: 413,
        body: { error_type: "PAYLOAD_TOO_LARGE" },
      });
    }
  });
});
