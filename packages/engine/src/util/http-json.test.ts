import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpRequest } from "./http-json.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

async function serve(handle: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      body += c;
    });
    req.on("end", () => handle(req, body, res));
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
}

const post = (url: URL, body: string, o: { timeoutMs?: number; retryIfReset?: boolean } = {}) =>
  httpRequest(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    timeoutMs: o.timeoutMs ?? 5000,
    retryIfReset: o.retryIfReset,
  });

describe("httpRequest", () => {
  it("sends a non-ASCII JSON body whole and returns the answer's status and text", async () => {
    const url = await serve((_req, body, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ echoed: JSON.parse(body) }));
    });
    const answer = await post(url, JSON.stringify({ text: "café ✓ 日本" }));
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.text)).toEqual({ echoed: { text: "café ✓ 日本" } });
  });

  it("gives up after its timeout with a message naming the server", async () => {
    const url = await serve(() => {}); // never answers
    await expect(post(url, "{}", { timeoutMs: 200 })).rejects.toThrow(
      `no answer from ${url.origin} within 200 ms`,
    );
  });

  it("leaves no timer behind once the answer is in", async () => {
    const url = await serve((_req, _body, res) => res.end("ok"));
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    expect((await post(url, "{}", { timeoutMs: 60_000 })).text).toBe("ok");
    expect(timers()).toBe(before);
  });

  it("gives up after its timeout on an answer that stops halfway", async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial":'); // and nothing more
    });
    await expect(post(url, "{}", { timeoutMs: 200 })).rejects.toThrow(
      `no answer from ${url.origin} within 200 ms`,
    );
  });

  it("a kept-alive connection closed as it is reused is retried once only when asked", async () => {
    // The second request on each connection finds it closed before any answer.
    const url = await serve((req, _body, res) => {
      const socket = req.socket as typeof req.socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      if (socket.served > 1) return socket.destroy();
      res.end("ok");
    });
    expect((await post(url, "{}")).text).toBe("ok");
    await expect(post(url, "{}")).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await post(url, "{}")).text).toBe("ok"); // a new connection
    expect((await post(url, "{}", { retryIfReset: true })).text).toBe("ok");
  });
});
