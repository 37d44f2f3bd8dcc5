import { describe, expect, it } from 'vitest';
import { ifHolds, parseIfHeader, submittedTokens, type IfState } from './dav-if-header';
import { DavLocks, lockTimeout, MAX_LOCK_SECONDS } from './dav-locks';
import { hrefOf, pathFromUri, pathFromUrlPath } from './dav-paths';
import { DavError } from './dav.errors';
import { childElements, nameOf, parseXml, propElement, serialize, xmlEscape } from './dav-xml';

const status = (fn: () => unknown): number | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DavError) return err.status;
    throw err;
  }
  return undefined;
};

describe('If header', () => {
  it('parses untagged and tagged lists, Not, tokens and entity tags', () => {
    expect(parseIfHeader('(<urn:a> ["e1"]) (Not <DAV:no-lock>)')).toEqual([
      {
        resource: null,
        conditions: [
          { not: false, token: 'urn:a' },
          { not: false, etag: '"e1"' },
        ],
      },
      { resource: null, conditions: [{ not: true, token: 'DAV:no-lock' }] },
    ]);
    expect(parseIfHeader('<http://h/dav/x> (<urn:a>) <http://h/dav/y> (["e"])')).toEqual([
      { resource: 'http://h/dav/x', conditions: [{ not: false, token: 'urn:a' }] },
      { resource: 'http://h/dav/y', conditions: [{ not: false, etag: '"e"' }] },
    ]);
  });

  it('refuses malformed headers with 400', () => {
    for (const bad of ['', '(', '(<urn:a>', '()', '(<urn:a>) <http://x> (<urn:b>)', 'junk', '(["e")']) {
      expect(
        status(() => parseIfHeader(bad)),
        bad,
      ).toBe(400);
    }
  });

  it('holds when any list holds for its resource; submits only tokens not negated', async () => {
    const state: IfState = { etag: '"e1"', tokens: new Set(['urn:a']) };
    const of = () => Promise.resolve(state);
    expect(await ifHolds(parseIfHeader('(<urn:a>)'), of)).toBe(true);
    expect(await ifHolds(parseIfHeader('(<urn:b>)'), of)).toBe(false);
    expect(await ifHolds(parseIfHeader('(<urn:b>) (Not <DAV:no-lock>)'), of)).toBe(true);
    expect(await ifHolds(parseIfHeader('(<urn:a> ["e2"]) (Not <DAV:no-lock> ["e2"])'), of)).toBe(false);
    expect(await ifHolds(parseIfHeader('(<urn:a> [W/"e1"])'), of)).toBe(true);
    expect([...submittedTokens(parseIfHeader('(<urn:a>) (Not <urn:b>)'))]).toEqual(['urn:a']);
  });
});

describe('locks', () => {
  const base = { depth: 0 as const, owner: null, userId: 1n, timeoutSeconds: 60 };

  it('conflict as RFC 4918 says: exclusive with anything, shared with shared is fine', () => {
    const locks = new DavLocks();
    const shared = locks.take({ ...base, root: '/a/f', scope: 'shared' });
    locks.take({ ...base, root: '/a/f', scope: 'shared', userId: 2n });
    expect(status(() => locks.take({ ...base, root: '/a/f', scope: 'exclusive' }))).toBe(423);
    locks.release(shared.token);
    expect(locks.covering('/a/f')).toHaveLength(1);
  });

  it('a depth-infinity lock covers everything below and conflicts with locks there', () => {
    const locks = new DavLocks();
    locks.take({ ...base, root: '/a/f', scope: 'exclusive' });
    expect(status(() => locks.take({ ...base, root: '/a', depth: 'infinity', scope: 'exclusive' }))).toBe(
      423,
    );
    const deep = new DavLocks();
    const top = deep.take({ ...base, root: '/a', depth: 'infinity', scope: 'exclusive' });
    expect(deep.covering('/a/b/c').map((l) => l.token)).toEqual([top.token]);
    expect(deep.covering('/ab')).toEqual([]);
    expect(deep.guarding('/a', '/').map((l) => l.token)).toEqual([top.token]);
    deep.releaseWithin('/a');
    expect(deep.covering('/a/b')).toEqual([]);
  });

  it('expires locks after their timeout; timeouts are capped', () => {
    const locks = new DavLocks();
    const lock = locks.take({ ...base, root: '/x', scope: 'exclusive', timeoutSeconds: 0 });
    expect(locks.get(lock.token)).toBeUndefined();
    expect(lockTimeout('Second-30')).toBe(30);
    expect(lockTimeout('Infinite, Second-4100000000')).toBe(MAX_LOCK_SECONDS);
    expect(lockTimeout('Second-99999999')).toBe(MAX_LOCK_SECONDS);
    expect(lockTimeout('nonsense')).toBeGreaterThan(0);
  });
});

describe('paths', () => {
  it('decodes request paths under /dav and checks them by the namespace rules', () => {
    expect(pathFromUrlPath('/dav')).toBe('/');
    expect(pathFromUrlPath('/dav/')).toBe('/');
    expect(pathFromUrlPath('/dav/home/a%20b/%C3%BC.txt')).toBe('/home/a b/ü.txt');
    expect(pathFromUrlPath('/dav/home/x/')).toBe('/home/x');
    expect(status(() => pathFromUrlPath('/dav/home/a%2Fb'))).toBe(400);
    expect(status(() => pathFromUrlPath('/dav/home/%E0%A4%A'))).toBe(400);
    expect(status(() => pathFromUrlPath('/dav/home/../etc'))).toBe(400);
    expect(status(() => pathFromUrlPath('/dav/a/%00'))).toBe(400);
  });

  it('reads destinations on this site only', () => {
    const base = 'http://site:8080/dav/a';
    expect(pathFromUri('http://site:8080/dav/b%20c', base, ['site:8080'])).toBe('/b c');
    expect(pathFromUri('/dav/b', base, ['site:8080'])).toBe('/b');
    expect(status(() => pathFromUri('http://elsewhere/dav/b', base, ['site:8080']))).toBe(502);
    expect(status(() => pathFromUri('http://site:8080/api/v1/data', base, ['site:8080']))).toBe(502);
  });

  it('encodes hrefs segment by segment, collections with a slash', () => {
    expect(hrefOf('/', true)).toBe('/dav/');
    expect(hrefOf('/home/a b/#1%', false)).toBe('/dav/home/a%20b/%231%25');
    expect(hrefOf('/home/d', true)).toBe('/dav/home/d/');
  });
});

describe('XML', () => {
  it('parses namespaces, refuses malformed XML and document type declarations', () => {
    const doc = parseXml('<D:prop xmlns:D="DAV:"><x:a xmlns:x="urn:x">1</x:a><b xmlns="">2</b></D:prop>');
    expect(childElements(doc.documentElement!).map(nameOf)).toEqual([
      { ns: 'urn:x', name: 'a' },
      { ns: '', name: 'b' },
    ]);
    expect(serialize(childElements(doc.documentElement!)[0]!)).toBe('<x:a xmlns:x="urn:x">1</x:a>');
    for (const bad of [
      '<a>',
      '<a><b></a>',
      '',
      '<D:a/>',
      '<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>',
      '<a>&#0;</a>',
      '<a b="&#x0;"/>',
    ]) {
      expect(
        status(() => parseXml(bad)),
        bad,
      ).toBe(400);
    }
  });

  it('escapes text and writes property elements in their namespace', () => {
    expect(xmlEscape(`<a & "b" 'c'>`)).toBe('&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;');
    expect(propElement({ ns: 'DAV:', name: 'getetag' }, 'x')).toBe('<D:getetag>x</D:getetag>');
    expect(propElement({ ns: 'urn:x', name: 'p' })).toBe('<p xmlns="urn:x"/>');
    expect(propElement({ ns: '', name: 'p' }, 'v')).toBe('<p xmlns="">v</p>');
  });
});
