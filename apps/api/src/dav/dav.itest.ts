import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

/**
 * The WebDAV endpoint against a real site and catalog: authentication, the caller's permissions,
 * the byte path shared with the API, locks that writes respect, and the answers clients rely on.
 * The clients themselves (litmus, rclone, davfs2) run in dav-clients.itest.ts.
 */

let site: TestSite;
let alice: TestUser;
let bob: TestUser;
let aliceToken: string;
let aliceReadToken: string;
let bobToken: string;

async function token(user: TestUser, scope: 'read' | 'write', collection?: string): Promise<string> {
  const res = await user.client.post<{ secret: string }>('/api/v1/tokens', {
    name: `dav-${scope}-${randomBytes(3).toString('hex')}`,
    scope,
    ...(collection ? { collection } : {}),
  });
  return expectStatus(res, 201).body.secret;
}

const basic = (username: string, secret: string): string =>
  'Basic ' + Buffer.from(`${username}:${secret}`).toString('base64');

interface DavAnswer {
  status: number;
  headers: Headers;
  text: string;
  bytes: Buffer;
}

async function dav(
  method: string,
  path: string,
  options: { auth?: string | null; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<DavAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  const auth = options.auth === undefined ? basic(alice.username, aliceToken) : options.auth;
  if (auth) headers.authorization = auth;
  const res = await fetch(new URL(path, site.url), {
    method,
    headers,
    body: options.body === undefined ? undefined : new Uint8Array(Buffer.from(options.body)),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, text: bytes.toString('utf8'), bytes };
}

const propfind = (path: string, depth: string, body?: string, auth?: string | null): Promise<DavAnswer> =>
  dav('PROPFIND', path, {
    auth,
    headers: { depth, 'content-type': 'application/xml' },
    body,
  });

const expectDav = (res: DavAnswer, status: number): DavAnswer => {
  expect(res.status, `${res.status} ${res.text.slice(0, 400)}`).toBe(status);
  return res;
};

beforeAll(async () => {
  site = await startTestSite({ LOGIN_RATE_LIMIT: '5', LOGIN_ADDRESS_RATE_LIMIT: '50' });
  alice = await site.createUser();
  bob = await site.createUser();
  aliceToken = await token(alice, 'write');
  aliceReadToken = await token(alice, 'read');
  bobToken = await token(bob, 'write');
});

afterAll(async () => {
  await site?.close();
});

describe('WebDAV: authentication', () => {
  it('asks for credentials with 401 and a Basic challenge; OPTIONS answers without them', async () => {
    const res = expectDav(await propfind(`/dav/home/${alice.username}/`, '0', undefined, null), 401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="Tributary lsu", charset="UTF-8"$/);
    expect(res.text).toContain('<T:code>UNAUTHENTICATED</T:code>');
    const options = expectDav(await dav('OPTIONS', '/dav/', { auth: null }), 200);
    expect(options.headers.get('dav')).toBe('1, 2');
    expect(options.headers.get('allow')).toContain('PROPFIND');
  });

  it('takes the username with an API token as the password, a bearer token, or the session cookie', async () => {
    const home = `/dav/home/${alice.username}/`;
    expectDav(await propfind(home, '0'), 207);
    expectDav(await propfind(home, '0', undefined, `Bearer ${aliceToken}`), 207);
    const cookie = `trib_session=${alice.client.sessionCookie ?? ''}`;
    const viaCookie = await dav('PROPFIND', home, { auth: null, headers: { depth: '0', cookie } });
    expectDav(viaCookie, 207);
    // A session writes without the CSRF header: WebDAV's write methods need a CORS preflight.
    expectDav(await dav('MKCOL', `${home}via-session`, { auth: null, headers: { cookie } }), 201);
  });

  it("refuses a wrong token, another user's token and an account password with 401", async () => {
    const home = `/dav/home/${alice.username}/`;
    for (const auth of [
      basic(alice.username, 'trib_not-a-real-token'),
      basic(alice.username, bobToken),
      basic(alice.username, alice.password),
    ]) {
      const res = expectDav(await propfind(home, '0', undefined, auth), 401);
      expect(res.headers.get('www-authenticate')).toContain('Basic');
    }
  });

  it('gives a read-only token 403 on every write and answers its reads', async () => {
    const auth = basic(alice.username, aliceReadToken);
    const home = `/dav/home/${alice.username}`;
    expectDav(await propfind(`${home}/`, '1', undefined, auth), 207);
    for (const [method, headers] of [
      ['PUT', {}],
      ['MKCOL', {}],
      ['DELETE', {}],
      ['PROPPATCH', { 'content-type': 'application/xml' }],
      ['LOCK', {}],
      ['MOVE', { destination: `${site.url}${home}/elsewhere` }],
      ['COPY', { destination: `${site.url}${home}/elsewhere` }],
    ] as const) {
      const res = expectDav(await dav(method, `${home}/via-session`, { auth, headers }), 403);
      expect(res.text).toContain('TOKEN_SCOPE_INSUFFICIENT');
    }
  });

  it("applies a token's confinement to its collection", async () => {
    const inside = `/home/${alice.username}/confined`;
    expectDav(await dav('MKCOL', `/dav${inside}`), 201);
    const confined = basic(alice.username, await token(alice, 'write', inside));
    expectDav(await propfind(`/dav${inside}/`, '0', undefined, confined), 207);
    const outside = expectDav(await propfind(`/dav/home/${alice.username}/`, '0', undefined, confined), 403);
    expect(outside.text).toContain('TOKEN_OUTSIDE_COLLECTION');
  });

  it('limits failed sign-ins per address and username as the portal does (429 with Retry-After)', async () => {
    const name = `nobody-${randomBytes(3).toString('hex')}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await propfind('/dav/', '0', undefined, basic(name, 'trib_wrong'))).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const limited = await propfind('/dav/', '0', undefined, basic(name, 'trib_wrong'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another name from the same address is not limited by that one's failures.
    expectDav(await propfind(`/dav/home/${alice.username}/`, '0'), 207);
  });
});

describe("WebDAV: the namespace with the caller's permissions", () => {
  beforeAll(async () => {
    const home = `/dav/home/${bob.username}`;
    const auth = basic(bob.username, bobToken);
    expectDav(await dav('MKCOL', `${home}/private`, { auth }), 201);
    expectDav(await dav('PUT', `${home}/private/secret.txt`, { auth, body: 'top secret' }), 201);
  });

  it("hides another user's private collection over WebDAV as the API does", async () => {
    const path = `/home/${bob.username}/private`;
    const api = await alice.client.get('/api/v1/namespace/stat', { query: { path } });
    const viaDav = await propfind(`/dav${path}/`, '0');
    expect(viaDav.status).toBe(api.status);
    expect([403, 404]).toContain(viaDav.status);
    const file = await dav('GET', `/dav${path}/secret.txt`);
    expect(file.status).toBe(
      (await alice.client.get('/api/v1/data', { query: { path: `${path}/secret.txt` } })).status,
    );
    expect(file.text).not.toContain('top secret');
    // Nothing alice can list names it.
    for (const where of ['/dav/', '/dav/home/', `/dav/home/${bob.username}/`]) {
      const listing = await propfind(where, '1');
      expect(listing.text).not.toContain('private');
      expect(listing.text).not.toContain('secret.txt');
    }
    // Nor can she write there, whatever exists.
    expect((await dav('PUT', `/dav${path}/mine.txt`, { body: 'x' })).status).toBe(403);
    expect((await dav('MKCOL', `/dav${path}/sub`)).status).toBe(403);
  });
});

describe('WebDAV: methods', () => {
  const base = (): string => `/dav/home/${alice.username}/methods`;

  beforeAll(async () => {
    expectDav(await dav('MKCOL', base()), 201);
  });

  it('PUT goes through the upload path: the ETag is the SHA-256 the API reports, GET serves ranges', async () => {
    const bytes = randomBytes(100_000);
    const sha = createHash('sha256').update(bytes).digest('hex');
    const put = expectDav(
      await dav('PUT', `${base()}/data.bin`, {
        body: bytes,
        headers: { 'content-type': 'application/x-test' },
      }),
      201,
    );
    expect(put.headers.get('etag')).toBe(`"${sha}"`);
    const stat = await alice.client.get<{ checksum: string; contentType: string }>('/api/v1/namespace/stat', {
      query: { path: `/home/${alice.username}/methods/data.bin` },
    });
    expect(expectStatus(stat, 200).body).toMatchObject({
      checksum: `sha256:${sha}`,
      contentType: 'application/x-test',
    });
    const props = expectDav(await propfind(`${base()}/data.bin`, '0'), 207);
    expect(props.text).toContain(`<D:getetag>&quot;${sha}&quot;</D:getetag>`);
    expect(props.text).toContain('<D:getcontentlength>100000</D:getcontentlength>');
    expect(props.text).toContain('<D:getcontenttype>application/x-test</D:getcontenttype>');
    const range = expectDav(
      await dav('GET', `${base()}/data.bin`, { headers: { range: 'bytes=1000-1999' } }),
      206,
    );
    expect(range.bytes.equals(bytes.subarray(1000, 2000))).toBe(true);
    const head = expectDav(await dav('HEAD', `${base()}/data.bin`), 200);
    expect(head.headers.get('content-length')).toBe('100000');
    // A new version of the same object answers 204.
    expectDav(await dav('PUT', `${base()}/data.bin`, { body: 'v2' }), 204);
    expect((await dav('GET', `${base()}/data.bin`)).text).toBe('v2');
  });

  it('refuses PROPFIND at depth infinity, or without Depth, with propfind-finite-depth', async () => {
    for (const headers of [{ depth: 'infinity' }, {}] as Record<string, string>[]) {
      const res = expectDav(await dav('PROPFIND', `${base()}/`, { headers }), 403);
      expect(res.text).toContain('<D:propfind-finite-depth/>');
    }
  });

  it('answers 409 for a missing parent, 405 for MKCOL on something that exists, 400 for bad XML', async () => {
    expectDav(await dav('PUT', `${base()}/no/such/parent.txt`, { body: 'x' }), 409);
    expectDav(await dav('MKCOL', `${base()}/no/such`), 409);
    expectDav(await dav('MKCOL', base()), 405);
    // Onto itself or what holds it.
    expectDav(await dav('MKCOL', `${base()}/inner`), 201);
    expectDav(
      await dav('MOVE', `${base()}/inner`, { headers: { destination: `${base()}/inner/deeper` } }),
      409,
    );
    expectDav(await dav('MOVE', `${base()}/inner`, { headers: { destination: base() } }), 409);
    expectDav(await dav('COPY', `${base()}/inner`, { headers: { destination: `${base()}/inner` } }), 403);
    // Windows asks the server's root before mapping a drive.
    expect(expectDav(await dav('OPTIONS', '/', { auth: null }), 200).headers.get('dav')).toBe('1, 2');
    const bad = expectDav(await propfind(`${base()}/`, '0', '<D:propfind xmlns:D="DAV:"><D:prop>'), 400);
    expect(bad.text).toContain('XML_INVALID');
    const doctype = '<!DOCTYPE x [<!ENTITY a "b">]><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>';
    expectDav(await propfind(`${base()}/`, '0', doctype), 400);
    const nul =
      '<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><z xmlns="urn:z">&#0;</z></D:prop></D:set></D:propertyupdate>';
    expectDav(await dav('PROPPATCH', `${base()}/`, { body: nul }), 400);
  });

  it('answers malformed requests with 4xx, never 5xx', async () => {
    const x = `${base()}/odd.txt`;
    const odd: [string, string, Record<string, string>, string?][] = [
      ['PROPFIND', `${base()}/`, { depth: '2' }],
      ['PROPFIND', `${base()}/`, { depth: '1' }, '<D:propfind xmlns:D="DAV:"/>'],
      ['PROPFIND', `${base()}/`, { depth: '1' }, '<D:other xmlns:D="DAV:"/>'],
      ['PROPFIND', '/dav/a%00b', { depth: '0' }],
      ['PROPFIND', '/dav/%ZZ', { depth: '0' }],
      ['PUT', x, { 'content-range': 'bytes 0-1/2' }, 'ab'],
      ['PUT', x, { if: '(<urn:x' }, 'a'],
      ['PUT', x, { if: '<http://elsewhere.example/dav/x> (<urn:x>)' }, 'a'],
      ['MOVE', x, {}],
      ['MOVE', x, { destination: 'http://[::1' }],
      ['COPY', x, { destination: `${base()}/y`, overwrite: 'maybe' }],
      ['LOCK', x, {}, '<D:lockinfo xmlns:D="DAV:"/>'],
      [
        'LOCK',
        x,
        { depth: '1' },
        '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>',
      ],
      ['LOCK', x, {}],
      ['UNLOCK', x, {}],
      ['UNLOCK', x, { 'lock-token': '<urn:nothing>' }],
      ['PROPPATCH', x, {}, '<D:propertyupdate xmlns:D="DAV:"><D:set/></D:propertyupdate>'],
      ['PROPPATCH', x, {}, '<D:propfind xmlns:D="DAV:"/>'],
      ['MKCOL', `${base()}/with-body`, { 'content-type': 'text/plain' }, 'body'],
      ['POST', x, {}],
      ['PATCH', x, {}, 'z'],
    ];
    expectDav(await dav('PUT', x, { body: 'odd' }), 201);
    for (const [method, path, headers, body] of odd) {
      const res = await dav(method, path, { headers, body });
      expect(
        res.status,
        `${method} ${path} ${JSON.stringify(headers)}: ${res.text.slice(0, 200)}`,
      ).toBeGreaterThanOrEqual(400);
      expect(
        res.status,
        `${method} ${path} ${JSON.stringify(headers)}: ${res.text.slice(0, 200)}`,
      ).toBeLessThan(500);
    }
    // The one 5xx a client can cause, as RFC 4918 says: a destination on another server.
    const elsewhere = { destination: 'http://elsewhere.example/dav/y' };
    expect(expectDav(await dav('MOVE', x, { headers: elsewhere }), 502).text).toContain(
      'DESTINATION_INVALID',
    );
  });

  it('DELETE moves to the trash, where the API lists it', async () => {
    expectDav(await dav('PUT', `${base()}/trash-me.txt`, { body: 'bye' }), 201);
    expectDav(await dav('DELETE', `${base()}/trash-me.txt`), 204);
    expectDav(await propfind(`${base()}/trash-me.txt`, '0'), 404);
    const trash = await alice.client.get<{ items: { originalPath: string }[] }>('/api/v1/trash');
    expect(expectStatus(trash, 200).body.items.map((t) => t.originalPath)).toContain(
      `/home/${alice.username}/methods/trash-me.txt`,
    );
  });

  it('keeps dead properties through MOVE and COPY; live ones are protected', async () => {
    const file = `${base()}/props.txt`;
    expectDav(await dav('PUT', file, { body: 'p' }), 201);
    const set =
      '<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:example:z"><D:set><D:prop>' +
      '<Z:colour>blue</Z:colour></D:prop></D:set></D:propertyupdate>';
    const patched = expectDav(await dav('PROPPATCH', file, { body: set }), 207);
    expect(patched.text).toContain('HTTP/1.1 200 OK');
    const protectedSet =
      '<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:example:z"><D:set><D:prop>' +
      '<D:getetag>x</D:getetag><Z:shape>round</Z:shape></D:prop></D:set></D:propertyupdate>';
    const refused = expectDav(await dav('PROPPATCH', file, { body: protectedSet }), 207);
    expect(refused.text).toContain('HTTP/1.1 403 Forbidden');
    expect(refused.text).toContain('HTTP/1.1 424 Failed Dependency');
    const ask =
      '<D:propfind xmlns:D="DAV:"><D:prop><Z:colour xmlns:Z="urn:example:z"/><Z:shape xmlns:Z="urn:example:z"/></D:prop></D:propfind>';
    expectDav(await dav('MOVE', file, { headers: { destination: `${site.url}${base()}/moved.txt` } }), 201);
    const moved = expectDav(await propfind(`${base()}/moved.txt`, '0', ask), 207);
    expect(moved.text).toMatch(/<Z:colour xmlns:Z="urn:example:z">blue<\/Z:colour>/);
    expect(moved.text).toContain('HTTP/1.1 404 Not Found');
    expectDav(
      await dav('COPY', `${base()}/moved.txt`, { headers: { destination: `${base()}/copied.txt` } }),
      201,
    );
    const copied = expectDav(await propfind(`${base()}/copied.txt`, '0', ask), 207);
    expect(copied.text).toContain('>blue</Z:colour>');
    expect((await dav('GET', `${base()}/copied.txt`)).text).toBe('p');
    // Overwrite: F refuses an existing destination; the default replaces it.
    const headers = { destination: `${base()}/copied.txt`, overwrite: 'F' };
    expectDav(await dav('COPY', `${base()}/moved.txt`, { headers }), 412);
    expectDav(
      await dav('MOVE', `${base()}/moved.txt`, { headers: { destination: headers.destination } }),
      204,
    );
  });

  it('COPY of a collection copies symbolic links as links, and answers 207 naming a member it could not copy', async () => {
    const dir = `${base()}/tree`;
    const apiDir = `/home/${alice.username}/methods/tree`;
    expectDav(await dav('MKCOL', dir), 201);
    expectDav(await dav('PUT', `${dir}/ok.txt`, { body: 'fine' }), 201);
    expectDav(await dav('PUT', `${dir}/lost.txt`, { body: 'gone' }), 201);
    const link = await alice.client.post('/api/v1/namespace/symlinks', {
      path: `${apiDir}/link`,
      target: 'ok.txt',
    });
    expectStatus(link, 201);
    // The only copy of lost.txt's bytes is no longer good: nothing can serve it.
    await site.query(
      `UPDATE replicas SET status = 'failed' WHERE object_id = (
         SELECT o.id FROM data_objects o JOIN collections c ON c.id = o.collection_id
          WHERE c.path = $1 AND o.name = 'lost.txt')`,
      [apiDir],
    );
    const copy = expectDav(await dav('COPY', dir, { headers: { destination: `${base()}/tree-copy` } }), 207);
    expect(copy.text).toContain(`<D:href>${base()}/tree-copy/lost.txt</D:href><D:status>HTTP/1.1 503`);
    expect(copy.text).not.toContain('ok.txt');
    expect((await dav('GET', `${base()}/tree-copy/ok.txt`)).text).toBe('fine');
    expectDav(await propfind(`${base()}/tree-copy/lost.txt`, '0'), 404);
    const copiedLink = await alice.client.get<{ kind: string; linkTarget: string }>(
      '/api/v1/namespace/stat',
      {
        query: { path: `/home/${alice.username}/methods/tree-copy/link` },
      },
    );
    expect(expectStatus(copiedLink, 200).body).toMatchObject({ kind: 'symlink', linkTarget: 'ok.txt' });
  });

  it('honours locks: writes need the token, other users are refused, timeouts expire', async () => {
    const file = `${base()}/locked.txt`;
    expectDav(await dav('PUT', file, { body: 'one' }), 201);
    const lockBody =
      '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype>' +
      '<D:owner>alice</D:owner></D:lockinfo>';
    const locked = expectDav(
      await dav('LOCK', file, { body: lockBody, headers: { timeout: 'Second-2' } }),
      200,
    );
    const lockToken = locked.headers.get('lock-token') ?? '';
    expect(lockToken).toMatch(/^<urn:trib:[\w-]+>$/);
    expect(locked.text).toContain('<D:timeout>Second-2</D:timeout>');
    expectDav(await dav('PUT', file, { body: 'two' }), 423);
    expectDav(await dav('DELETE', file), 423);
    expectDav(await dav('PUT', file, { body: 'two', headers: { if: `(${lockToken})` } }), 204);
    // Bob cannot use alice's token even where he could write.
    const granted = await alice.client.put('/api/v1/permissions', {
      path: `/home/${alice.username}/methods`,
      user: bob.username,
      level: 'write',
    });
    expectStatus(granted, 200);
    const asBob = basic(bob.username, bobToken);
    expectDav(await dav('PUT', file, { auth: asBob, body: 'bob', headers: { if: `(${lockToken})` } }), 423);
    expectDav(await dav('UNLOCK', file, { auth: asBob, headers: { 'lock-token': lockToken } }), 403);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expectDav(await dav('PUT', file, { body: 'three' }), 204);
    expectDav(await dav('UNLOCK', file, { headers: { 'lock-token': lockToken } }), 409);
  });

  it('reports quota used and available on collections when asked', async () => {
    const ask =
      '<D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/><D:quota-available-bytes/></D:prop></D:propfind>';
    const res = expectDav(await propfind(`${base()}/`, '0', ask), 207);
    const used = /<D:quota-used-bytes>(\d+)<\/D:quota-used-bytes>/.exec(res.text);
    const available = /<D:quota-available-bytes>(\d+)<\/D:quota-available-bytes>/.exec(res.text);
    expect(Number(used?.[1])).toBeGreaterThan(0);
    expect(Number(available?.[1])).toBeGreaterThan(0);
  });
});

describe('WebDAV: failed sign-ins counted with the portal', () => {
  let limited: TestSite;
  beforeAll(async () => {
    limited = await startTestSite({ LOGIN_RATE_LIMIT: '1000', LOGIN_ADDRESS_RATE_LIMIT: '4' });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('stops an address that fails at the portal and over WebDAV once both together reach the limit', async () => {
    const account = await limited.createAccount();
    const login = (password: string) =>
      limited.anonymous().post('/api/v1/auth/login', { username: account.username, password });
    const davTry = async (secret: string): Promise<number> =>
      (
        await fetch(`${limited.url}/dav/`, {
          method: 'PROPFIND',
          headers: { depth: '0', authorization: basic(account.username, secret) },
        })
      ).status;
    expect((await login('wrong-password-1')).status).toBe(401);
    expect((await login('wrong-password-2')).status).toBe(401);
    expect(await davTry('trib_wrong-1')).toBe(401);
    expect(await davTry('trib_wrong-2')).toBe(401);
    expect(await davTry('trib_wrong-3')).toBe(429);
    expect((await login(account.password)).status).toBe(429);
  });
});
