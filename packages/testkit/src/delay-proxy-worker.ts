import { parentPort, workerData } from 'node:worker_threads';
import { startDelayProxy } from './delay-proxy';

/** Runs the delaying proxy on a thread of its own, so it does not share the client's event loop. */
const { host, port, rttMs } = workerData as { host: string; port: number; rttMs: number };
void startDelayProxy({ host, port }, rttMs).then((proxy) => {
  parentPort?.postMessage(proxy.url);
  parentPort?.on('message', () => void proxy.close().then(() => process.exit(0)));
});
