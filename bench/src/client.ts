import { createReadStream } from 'node:fs';
import http from 'node:http';
import { pipeline } from 'node:stream/promises';

/** What to send: bytes in memory, or a file streamed from disk. */
export type Body = { kind: 'bytes'; data: Buffer | string } | { kind: 'file'; path: string; size: number };

export interface Reply {
  status: number;
  text: string;
  setCookies: string[];
}

/** The two HTTP clients the bench can drive; `--client` picks one. */
export type ClientKind = 'http' | 'fetch';

export interface Transport {
  request(method: string, path: string, headers: Record<string, string>, body?: Body): Promise<Reply>;
  close(): void;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** node:http with a keep-alive agent: the lowest per-request overhead in Node 20. */
export function httpTransport(baseUrl: string, maxSockets: number): Transport {
  const agent = new http.Agent({ keepAlive: true, maxSockets, scheduling: 'lifo' });
  const base = new URL(baseUrl);
  return {
    request(method, path, headers, body) {
      return new Promise<Reply>((resolve, reject) => {
        const length = body === undefined ? 0 : bodyLength(body);
        const req = http.request(
          {
            agent,
            host: base.hostname,
            port: base.port,
            method,
            path,
            headers: { ...headers, 'content-length': String(length) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', reject);
            res.on('end', () => {
              const setCookie = res.headers['set-cookie'];
              resolve({
                status: res.statusCode ?? 0,
                text: Buffer.concat(chunks).toString('utf8'),
                setCookies: setCookie ?? [],
              });
            });
          },
        );
        req.on('error', reject);
        if (body === undefined) req.end();
        else if (body.kind === 'bytes') req.end(body.data);
        else pipeline(createReadStream(body.path, { highWaterMark: 1024 * 1024 }), req).catch(reject);
      });
    },
    close() {
      agent.destroy();
    },
  };
}

/** The global fetch (undici, keep-alive by default). */
export function fetchTransport(baseUrl: string): Transport {
  return {
    async request(method, path, headers, body) {
      const init: RequestInit & { duplex?: 'half' } = { method, headers: { ...headers } };
      if (body?.kind === 'bytes') {
        init.body = body.data;
      } else if (body?.kind === 'file') {
        init.body = createReadStream(body.path, { highWaterMark: 1024 * 1024 });
        init.duplex = 'half';
        (init.headers as Record<string, string>)['content-length'] = String(body.size);
      }
      const res = await fetch(new URL(path, baseUrl), init);
      return { status: res.status, text: await res.text(), setCookies: res.headers.getSetCookie() };
    },
    close() {},
  };
}

function bodyLength(body: Body): number {
  if (body.kind === 'file') return body.size;
  return typeof body.data === 'string' ? Buffer.byteLength(body.data) : body.data.length;
}

/** Fails with the API's error envelope (`{ error: { code, message } }`) on any non-2xx reply. */
export function expectOk(reply: Reply, what: string): Reply {
  if (reply.status >= 200 && reply.status < 300) return reply;
  let code = 'HTTP_' + reply.status;
  let message = reply.text.slice(0, 300);
  try {
    const parsed = JSON.parse(reply.text) as { error?: { code?: string; message?: string } };
    code = parsed.error?.code ?? code;
    message = parsed.error?.message ?? message;
  } catch {
    // not JSON: keep the raw text
  }
  throw new ApiError(reply.status, code, `${what}: ${reply.status} ${code}: ${message}`);
}

/** A small client for the handful of endpoints the bench needs. */
export class BenchClient {
  constructor(
    private readonly transport: Transport,
    private readonly token: string,
  ) {}

  /** Signs in with a password and creates a write token (the secret is shown once). */
  static async createWriteToken(transport: Transport, username: string, password: string): Promise<string> {
    const login = expectOk(
      await transport.request(
        'POST',
        '/api/v1/auth/login',
        { 'content-type': 'application/json' },
        { kind: 'bytes', data: JSON.stringify({ username, password }) },
      ),
      'sign in',
    );
    const cookie = login.setCookies.map((c) => c.split(';')[0]).find((c) => c?.startsWith('trib_session='));
    if (!cookie) throw new Error('sign in: no trib_session cookie in the reply');
    const { csrfToken } = JSON.parse(login.text) as { csrfToken: string };
    const created = expectOk(
      await transport.request(
        'POST',
        '/api/v1/tokens',
        { 'content-type': 'application/json', cookie, 'x-csrf-token': csrfToken },
        {
          kind: 'bytes',
          data: JSON.stringify({ name: `bench-ingest ${new Date().toISOString()}`, scope: 'write' }),
        },
      ),
      'create token',
    );
    await transport.request('POST', '/api/v1/auth/logout', { cookie, 'x-csrf-token': csrfToken });
    return (JSON.parse(created.text) as { secret: string }).secret;
  }

  private auth(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  async homePath(): Promise<string> {
    const me = expectOk(await this.transport.request('GET', '/api/v1/me', this.auth()), 'GET /api/v1/me');
    return (JSON.parse(me.text) as { homePath: string }).homePath;
  }

  /** POSTs a JSON body (already serialised) and returns the parsed reply. */
  async postJson<T>(path: string, body: string): Promise<T> {
    const reply = expectOk(
      await this.transport.request('POST', path, this.auth({ 'content-type': 'application/json' }), {
        kind: 'bytes',
        data: body,
      }),
      `POST ${path}`,
    );
    return JSON.parse(reply.text) as T;
  }

  async makeCollection(path: string): Promise<void> {
    expectOk(
      await this.transport.request(
        'POST',
        '/api/v1/namespace/collections',
        this.auth({ 'content-type': 'application/json' }),
        { kind: 'bytes', data: JSON.stringify({ path, parents: true }) },
      ),
      `create collection ${path}`,
    );
  }

  async put(path: string, body: Body): Promise<void> {
    expectOk(
      await this.transport.request(
        'PUT',
        `/api/v1/data?path=${encodeURIComponent(path)}`,
        this.auth({ 'content-type': 'application/octet-stream' }),
        body,
      ),
      `PUT ${path}`,
    );
  }

  /**
   * Uploads many files into one collection in one `POST /api/v1/data/batch` request
   * (multipart/form-data, one file part per object, built in memory).
   */
  async putBatch(dir: string, files: { name: string; data: Buffer }[]): Promise<void> {
    const boundary = `----tributary-bench-${Date.now().toString(36)}`;
    const chunks: Buffer[] = [];
    for (const f of files) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${f.name}"\r\n` +
            'Content-Type: application/octet-stream\r\n\r\n',
        ),
        f.data,
        Buffer.from('\r\n'),
      );
    }
    chunks.push(Buffer.from(`--${boundary}--\r\n`));
    expectOk(
      await this.transport.request(
        'POST',
        `/api/v1/data/batch?path=${encodeURIComponent(dir)}`,
        this.auth({ 'content-type': `multipart/form-data; boundary=${boundary}` }),
        { kind: 'bytes', data: Buffer.concat(chunks) },
      ),
      `POST batch into ${dir}`,
    );
  }

  /** Moves `path` to the trash and then purges it; best effort, for runs against a shared site. */
  async remove(path: string): Promise<void> {
    expectOk(
      await this.transport.request(
        'DELETE',
        `/api/v1/namespace?path=${encodeURIComponent(path)}`,
        this.auth(),
      ),
      `DELETE ${path}`,
    );
    const trash = expectOk(
      await this.transport.request('GET', '/api/v1/trash', this.auth()),
      'GET /api/v1/trash',
    );
    const parsed = JSON.parse(trash.text) as
      { id: string; originalPath: string }[] | { items: { id: string; originalPath: string }[] };
    const items = Array.isArray(parsed) ? parsed : parsed.items;
    const entry = items.find((e) => e.originalPath === path);
    if (entry) {
      expectOk(await this.transport.request('DELETE', `/api/v1/trash/${entry.id}`, this.auth()), 'purge');
    }
  }
}
