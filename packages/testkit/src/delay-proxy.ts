import { once } from 'node:events';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * A TCP proxy on loopback that delays every byte by half the round-trip time in each direction,
 * so a request and its answer cost `rttMs` more than on plain loopback (latency only: bandwidth is
 * loopback's). Order is kept: each direction is a queue released by one timer.
 */
export async function startDelayProxy(
  target: { host: string; port: number },
  rttMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const oneWay = rttMs / 2;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    delayed(client, upstream, oneWay);
    delayed(upstream, client, oneWay);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function delayed(from: net.Socket, to: net.Socket, delayMs: number): void {
  const queue: { at: number; data: Buffer }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const release = (): void => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.at <= now + 0.5) to.write(queue.shift()!.data);
    if (queue.length > 0) timer = setTimeout(release, queue[0]!.at - now);
    else if (ended) to.end();
  };
  from.on('data', (data: Buffer) => {
    queue.push({ at: performance.now() + delayMs, data });
    timer ??= setTimeout(release, delayMs);
  });
  from.on('end', () => {
    ended = true;
    if (queue.length === 0 && !timer) to.end();
  });
}

/** The same proxy on a worker thread; `close` stops the thread. */
export async function startDelayProxyThread(
  target: { host: string; port: number },
  rttMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const worker = new Worker(path.join(__dirname, 'delay-proxy-worker.js'), {
    workerData: { ...target, rttMs },
  });
  const [url] = (await once(worker, 'message')) as [string];
  return {
    url,
    close: async () => {
      const exited = once(worker, 'exit');
      worker.postMessage('close');
      await exited;
    },
  };
}
