// A push worker's HTTP side as the dispatcher sees it: it takes every push and cancel (200, or what
// `answer` and `cancelAnswer` say) and remembers which runs it was pushed and told to cancel, in
// order; it runs nothing (the test reports for it through the engine).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll } from "vitest";

export interface FakePushWorker {
  url: string;
  /** Execution ids in the order their pushes came. */
  pushes: string[];
  /** Execution ids in the order their cancels came. */
  cancels: string[];
}

export async function acceptingPushWorker(
  o: {
    /** The status this push is answered with (default 200); `nth` counts pushes from 0. */
    answer?: (nth: number) => number;
    /** The status this cancel is answered with (default 200); `nth` counts cancels from 0. */
    cancelAnswer?: (nth: number) => number;
  } = {},
): Promise<FakePushWorker> {
  const pushes: string[] = [];
  const cancels: string[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      let status = 200;
      if (req.url === "/execute") {
        const id = (JSON.parse(body) as { execution_id: string }).execution_id;
        status = o.answer?.(pushes.length) ?? 200;
        pushes.push(id);
      } else if (req.url?.startsWith("/cancel/")) {
        status = o.cancelAnswer?.(cancels.length) ?? 200;
        cancels.push(decodeURIComponent(req.url.slice("/cancel/".length)));
      }
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(status === 200 ? { status: "accepted" } : { error: "at capacity" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, pushes, cancels };
}
