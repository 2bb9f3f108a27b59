// A TCP proxy in front of a real service (Postgres, Redis) that a test can cut and restore: an
// outage of the real thing as its clients see it (open connections reset, new ones refused), without
// stopping the service other tests share.
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

export interface TcpProxy {
  /** The target URL with its host and port replaced by the proxy's. */
  url: string;
  /** Resets every open connection and closes the port: new connections are refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);

  const cut = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      for (const socket of sockets) socket.resetAndDestroy();
    });
  return {
    url: url.toString(),
    cut,
    restore: () => (server.listening ? Promise.resolve() : listen(port)),
    close: cut,
  };
}
