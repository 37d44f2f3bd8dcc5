import http from 'node:http';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestClient, type TestSite } from './test/test-site';

interface Outcome {
  status?: number;
  /** How the request ended when no answer came: the socket's error code, or 'closed'. */
  cut?: string;
  ms: number;
}

/**
 * PUTs `chunks` pieces of 1 KiB with `gapMs` between them, then waits `stallMs` (if any) before the
 * last piece: a request body that trickles, and one that stops.
 */
function trickleUpload(
  site: TestSite,
  client: TestClient,
  objectPath: string,
  chunks: number,
  gapMs: number,
  stallMs = 0,
): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const url = new URL(site.url);
    url.pathname = '/api/v1/data';
    url.searchParams.set('path', objectPath);
    const req = http.request(url, {
      method: 'PUT',
      headers: {
        ...client.authHeaders('PUT'),
        'content-type': 'application/octet-stream',
        'content-length': String(chunks * 1024),
      },
    });
    let settled = false;
    const finish = (o: Omit<Outcome, 'ms'>): void => {
      if (settled) return;
      settled = true;
      resolve({ ...o, ms: Date.now() - started });
    };
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => finish({ status: res.statusCode }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => finish({ cut: err.code ?? err.message }));
    req.on('close', () => setTimeout(() => finish({ cut: 'closed' }), 50));
    let sent = 0;
    const next = (): void => {
      if (settled || req.destroyed) return;
      req.write(Buffer.alloc(1024, sent));
      sent++;
      if (sent === chunks) req.end();
      else setTimeout(next, sent === chunks - 1 && stallMs ? stallMs : gapMs);
    };
    next();
  });
}

describe('HTTP server timeouts', () => {
  let site: TestSite;
  let admin: TestClient;
  beforeAll(async () => {
    site = await startTestSite({ HTTP_IDLE_TIMEOUT_SECONDS: '1' });
    admin = await site.admin();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('sets no total request time by default, and a time for the headers', () => {
    const server: Server = site.siteApp.app.getHttpServer();
    expect(server.requestTimeout).toBe(0);
    expect(server.headersTimeout).toBe(60_000);
  });

  it('lets an upload that trickles for longer than the idle timeout (never pausing that long) finish', async () => {
    const outcome = await trickleUpload(site, admin, '/home/admin/trickled.bin', 12, 300);
    expect(outcome).toMatchObject({ status: 201 });
    expect(outcome.ms).toBeGreaterThan(3000);
    const stat = await admin.get<{ size: string }>('/api/v1/namespace/stat', {
      query: { path: '/home/admin/trickled.bin' },
    });
    expect(stat.status).toBe(200);
  });

  it('cuts an upload whose body stops arriving for longer than the idle timeout', async () => {
    const outcome = await trickleUpload(site, admin, '/home/admin/stalled.bin', 4, 100, 5000);
    expect(outcome.status).toBeUndefined();
    expect(outcome.cut).toBeDefined();
    // Cut after about a second of silence, well before the body's last piece would have come.
    expect(outcome.ms).toBeLessThan(4000);
    const stat = await admin.get('/api/v1/namespace/stat', { query: { path: '/home/admin/stalled.bin' } });
    expect(stat.status).toBe(404);
  });

  it('does not count the time a request takes to answer once its body is in', async () => {
    // A keep-alive connection idle between requests is Node's keepAliveTimeout's, not this one's.
    const first = await admin.get('/api/health');
    expect(first.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await admin.get('/api/health')).status).toBe(200);
  });
});
