import type http from 'node:http';
import type net from 'node:net';

/** Starts `server` listening on a free loopback port; its base URL (`http://127.0.0.1:<port>`). */
export async function listenOnLoopback(server: http.Server | net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

/** Cuts the server's open connections (a stalled answer among them) and closes it. */
export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/**
 * The answers that go wrong, which the tests of both ways of reading a body share: `/missing` a
 * JSON 404, `/broken` a 500 that is not JSON, `/short` 1,000 bytes of `body` and then the
 * connection cut, `/slow` 1,000 bytes and then nothing, never ending. False for any other path.
 */
export function answerTrouble(path: string, res: http.ServerResponse, body: Buffer): boolean {
  switch (path) {
    case '/missing':
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such object' } }));
      return true;
    case '/broken':
      res.writeHead(500, { 'content-length': '8' });
      res.end('not json');
      return true;
    case '/short':
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, 1000), () => res.destroy());
      return true;
    case '/slow':
      res.writeHead(200, { 'content-length': String(body.length) });
      res.write(body.subarray(0, 1000));
      // Never ends by itself.
      return true;
    default:
      return false;
  }
}
