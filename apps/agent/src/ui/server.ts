import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, type ConflictDecisionRequest } from '@tributary/shared';
import { activeSite, checkSetting, loadConfig, updateConfig, type AgentSettings } from '../config/config';
import { listMounts } from '../mount/state';
import { listTransfers } from '../transfers/transfer-records';
import { SiteService } from '../cli/service';
import { describeError } from '../cli/errors';
import { APP_JS, INDEX_HTML } from './page';
import { secretMatches, uiSecret } from './secret';

export const UI_COOKIE = 'trib_ui';

export interface UiServerOptions {
  env?: NodeJS.ProcessEnv;
  /** 0 (default) picks a free port. */
  port?: number;
}

export interface UiServer {
  /** The URL to open: it carries the secret once, which the page trades for a cookie. */
  url: string;
  /** The URL without the secret. */
  origin: string;
  port: number;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

/**
 * The agent's local UI: a small HTTP server bound to 127.0.0.1 only. Every request must carry the
 * per-install secret, either as `?secret=` on the first page load (answered with an HttpOnly,
 * SameSite=Strict cookie and a redirect that drops it from the address bar) or as that cookie.
 * Requests for any other Host are refused (DNS rebinding), and so are changes from other origins.
 */
export async function startUiServer(options: UiServerOptions = {}): Promise<UiServer> {
  const env = options.env ?? process.env;
  const secret = await uiSecret(env);
  let port = 0;
  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const failure = describeError(err);
      if (!res.headersSent)
        send(res, failure.status && failure.status < 500 ? failure.status : 502, {
          error: { code: failure.code, message: failure.message },
        });
      else res.end();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const host = req.headers.host ?? '';
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
      send(res, 421, { error: { code: 'WRONG_HOST', message: 'this server answers only on 127.0.0.1' } });
      return;
    }
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const cookie = parseCookies(req.headers.cookie)[UI_COOKIE];
    if (url.pathname === '/' && url.searchParams.has('secret')) {
      if (!secretMatches(url.searchParams.get('secret') ?? undefined, secret)) {
        sendText(res, 401, 'Wrong secret: open the URL `trib ui` prints.');
        return;
      }
      res.writeHead(303, {
        location: '/',
        'set-cookie': `${UI_COOKIE}=${secret}; HttpOnly; SameSite=Strict; Path=/`,
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      });
      res.end();
      return;
    }
    if (!secretMatches(cookie, secret)) {
      if (url.pathname.startsWith('/api/'))
        send(res, 401, {
          error: { code: 'UNAUTHENTICATED', message: 'the local UI secret is missing or wrong' },
        });
      else
        sendText(
          res,
          401,
          'This is the Tributary agent. Open the URL `trib ui` prints (it carries the secret).',
        );
      return;
    }
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      const origin = req.headers.origin;
      if (
        origin !== undefined &&
        origin !== `http://127.0.0.1:${port}` &&
        origin !== `http://localhost:${port}`
      ) {
        send(res, 403, {
          error: { code: 'CSRF_FAILED', message: "changes are accepted only from the agent's own page" },
        });
        return;
      }
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
        send(res, 415, { error: { code: 'VALIDATION_FAILED', message: 'send JSON' } });
        return;
      }
    }

    if (method === 'GET' && url.pathname === '/')
      return sendPage(res, INDEX_HTML, 'text/html; charset=utf-8');
    if (method === 'GET' && url.pathname === '/app.js')
      return sendPage(res, APP_JS, 'text/javascript; charset=utf-8');
    if (method === 'GET' && url.pathname === '/api/state') return send(res, 200, await state());
    if (method === 'GET' && url.pathname === '/api/conflicts') return send(res, 200, await conflicts());
    const decide = /^\/api\/conflicts\/([0-9a-f]{32})\/decision$/.exec(url.pathname);
    if (method === 'POST' && decide) {
      const body = (await readJson(req)) as ConflictDecisionRequest;
      const service = await siteService();
      return send(res, 200, await service.decideConflict(decide[1]!, body));
    }
    if (method === 'PUT' && url.pathname === '/api/settings')
      return send(res, 200, await saveSettings(await readJson(req)));
    send(res, 404, { error: { code: 'ROUTE_NOT_FOUND', message: `no ${method} ${url.pathname}` } });
  }

  async function siteService(): Promise<SiteService> {
    const site = activeSite(await loadConfig(env), env);
    if (!site?.token)
      throw new ApiError(
        401,
        'UNAUTHENTICATED',
        'not logged in: run `trib login --site <url> --token <token>`',
      );
    return new SiteService(site, site.token);
  }

  async function state() {
    const config = await loadConfig(env);
    let site: { name: string; url: string; user: string | null; loggedIn: boolean } | null = null;
    try {
      const active = activeSite(config, env);
      if (active)
        site = {
          name: active.name,
          url: active.url,
          user: active.profile?.username ?? null,
          loggedIn: Boolean(active.token),
        };
    } catch {
      site = null;
    }
    return {
      site,
      sites: Object.entries(config.sites).map(([name, p]) => ({
        name,
        url: p.url,
        user: p.username ?? null,
      })),
      settings: config.settings,
      mounts: await listMounts(env),
      transfers: (await listTransfers(env)).slice(0, 50),
    };
  }

  async function conflicts() {
    const service = await siteService();
    const page = await service.listConflicts({ status: 'open', involving: 'me', limit: 100 });
    return { items: page.items, total: page.total };
  }

  async function saveSettings(body: unknown) {
    if (!body || typeof body !== 'object')
      throw new ApiError(422, 'VALIDATION_FAILED', 'send an object of settings');
    const input = body as Record<string, unknown>;
    const changes: Partial<AgentSettings> = {};
    const errors: Record<string, string[]> = {};
    for (const [key, value] of Object.entries(input)) {
      if (key === 'site') continue;
      try {
        const [name, number] = checkSetting(key, value);
        changes[name] = number;
      } catch (err) {
        errors[key] = [(err as Error).message];
      }
    }
    const config = await loadConfig(env);
    if (input.site !== undefined && (typeof input.site !== 'string' || !config.sites[input.site])) {
      errors.site = ['choose one of the saved sites (log in to others with `trib login`)'];
    }
    if (Object.keys(errors).length > 0)
      throw new ApiError(422, 'VALIDATION_FAILED', 'some settings are not valid', errors);
    const saved = await updateConfig((c) => {
      Object.assign(c.settings, changes);
      if (typeof input.site === 'string') c.current = input.site;
    }, env);
    return { settings: saved.settings, site: saved.current ?? null };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    url: `${origin}/?secret=${secret}`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function sendText(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
  res.end(text + '\n');
}

function sendPage(res: http.ServerResponse, text: string, type: string): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': type,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function parseCookies(header: string | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) result[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return result;
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new ApiError(413, 'PAYLOAD_TOO_LARGE', 'the request is too large');
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new ApiError(422, 'VALIDATION_FAILED', 'the body is not valid JSON');
  }
}
