import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { createSiteApp } from '@tributary/api/embedding';
import type { SiteWorkerData, SiteWorkerMessage } from './site';

/** Worker-thread entry of the bench's own site (see site.ts): listen, report the port, close on request. */
async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('site-worker.js runs only as a worker thread');
  const { config, connection } = workerData as SiteWorkerData;
  try {
    const { app } = await createSiteApp(config, connection);
    await app.listen(config.port, '127.0.0.1');
    // Signals belong to the bench's main thread, which closes this site by message. Nest's shutdown
    // hooks would otherwise close the app and re-send the signal to the whole process.
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
    port.once('message', () => {
      void app.close().finally(() => port.close());
    });
    const address = app.getHttpServer().address() as AddressInfo;
    port.postMessage({ kind: 'listening', port: address.port } satisfies SiteWorkerMessage);
  } catch (err) {
    port.postMessage({
      kind: 'error',
      message: err instanceof Error ? err.message : String(err),
    } satisfies SiteWorkerMessage);
    port.close();
  }
}

void main();
