// A push worker's HTTP side as the dispatcher sees it: it takes every push (200) and remembers which
// runs it was pushed, in order; it runs nothing (the test reports for it through the engine).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll } from "vitest";

export async function acceptingPushWorker(): Promise<{ url: string; pushes: string[] }> {
  const pushes: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      if (req.url === "/execute") pushes.push((JSON.parse(body) as { execution_id: string }).execution_id);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: "accepted" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pushes };
}
