import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, ID_RANGE_SIZE, idRangeFor, loadConfig, parseByteSize } from './config';

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has safe defaults for an empty environment', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      siteId: 'lsu',
      siteName: 'LSU',
      siteIndex: 1,
      adminUsername: 'admin',
      adminPassword: undefined,
      databaseUrl: undefined,
      sessionTtlMs: 12 * 3600_000,
      loginRateLimit: 10,
      loginRateWindowMs: 60_000,
      maxUploadBytes: 1024 ** 4,
      cookieSecure: false,
      logFormat: 'text',
      logLevel: 'log',
    });
    expect(c.dataDir).toBe(path.resolve('.data'));
    expect(c.storageRoot).toBe(path.join(path.resolve('.data'), 'sites', 'lsu', 'storage'));
  });

  it('reads and converts every kind of setting', () => {
    const c = loadConfig({
      TRIBUTARY_DATA_DIR: '/srv/trib',
      PORT: '0',
      SITE_ID: 'ucsd-2',
      SITE_NAME: 'San Diego',
      SITE_INDEX: '7',
      SESSION_TTL_HOURS: '0.5',
      LOGIN_RATE_LIMIT: '3',
      LOGIN_RATE_WINDOW_SECONDS: '30',
      COOKIE_SECURE: 'true',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgresql://u:p@db:5432/catalog',
      ADMIN_PASSWORD: 'twelve-chars',
    });
    expect(c).toMatchObject({
      dataDir: '/srv/trib',
      storageRoot: '/srv/trib/sites/ucsd-2/storage',
      port: 0,
      siteId: 'ucsd-2',
      siteName: 'San Diego',
      siteIndex: 7,
      sessionTtlMs: 1800_000,
      loginRateLimit: 3,
      loginRateWindowMs: 30_000,
      cookieSecure: true,
      logFormat: 'json',
      logLevel: 'debug',
      databaseUrl: 'postgresql://u:p@db:5432/catalog',
      adminPassword: 'twelve-chars',
    });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['SITE_ID', 'LSU'],
    ['SITE_ID', 'a'],
    ['SITE_ID', '1site'],
    ['SITE_INDEX', '0'],
    ['SITE_INDEX', '32768'],
    ['ADMIN_PASSWORD', 'short'],
    ['SESSION_TTL_HOURS', '0'],
    ['LOGIN_RATE_LIMIT', '2.5'],
    ['COOKIE_SECURE', 'yes'],
    ['LOG_FORMAT', 'xml'],
    ['LOG_LEVEL', 'trace'],
    ['DATABASE_URL', 'not a url'],
    ['PUBLIC_URL', 'example.org'],
  ])('refuses %s=%s with a ConfigError naming the setting', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.message).toContain(`${name}:`);
  });

  it('names every bad setting at once', () => {
    const err = configError({ PORT: 'x', LOG_LEVEL: 'loud' });
    expect(err.message).toContain('PORT:');
    expect(err.message).toContain('LOG_LEVEL:');
  });

  it('trusts no proxy, lets /metrics need a credential and sets idle (not total) body timeouts by default', () => {
    const c = loadConfig({});
    expect(c.trustedProxies).toEqual([]);
    expect(c.loginAddressRateLimit).toBe(30);
    expect(c.metricsToken).toBeUndefined();
    expect(c.http).toEqual({ headersTimeoutMs: 60_000, requestTimeoutMs: 0, idleTimeoutMs: 300_000 });
  });

  it('reads TRUSTED_PROXIES, METRICS_TOKEN and the HTTP timeouts, and refuses bad ones', () => {
    const c = loadConfig({
      TRUSTED_PROXIES: '10.0.0.1, 192.168.0.0/16,loopback,::1',
      METRICS_TOKEN: 'm'.repeat(32),
      HTTP_IDLE_TIMEOUT_SECONDS: '0.5',
      HTTP_REQUEST_TIMEOUT_SECONDS: '3600',
    });
    expect(c.trustedProxies).toEqual(['10.0.0.1', '192.168.0.0/16', 'loopback', '::1']);
    expect(c.metricsToken).toBe('m'.repeat(32));
    expect(c.http).toMatchObject({ idleTimeoutMs: 500, requestTimeoutMs: 3_600_000 });
    expect(configError({ TRUSTED_PROXIES: 'proxy.example.org' }).message).toContain('TRUSTED_PROXIES');
    expect(configError({ TRUSTED_PROXIES: '10.0.0.0/33' }).message).toContain('TRUSTED_PROXIES');
    expect(configError({ METRICS_TOKEN: 'short' }).message).toContain('METRICS_TOKEN');
    expect(
      configError({ HTTP_REQUEST_TIMEOUT_SECONDS: '10', HTTP_HEADERS_TIMEOUT_SECONDS: '20' }).message,
    ).toContain('HTTP_HEADERS_TIMEOUT_SECONDS');
  });

  it('ignores unrelated environment variables', () => {
    expect(() => loadConfig({ PATH: '/usr/bin', HOME: '/root', SOMETHING_ELSE: '1' })).not.toThrow();
  });
});

describe('CACHE_MAX_BYTES (docs/caching.md)', () => {
  it('is 0 (no cache) by default and takes bytes or binary units', () => {
    expect(loadConfig({}).cache.maxBytes).toBe(0);
    expect(loadConfig({ CACHE_MAX_BYTES: '200GiB' }).cache.maxBytes).toBe(200 * 1024 ** 3);
    expect(parseByteSize('1073741824')).toBe(1024 ** 3);
    expect(parseByteSize('512 MiB')).toBe(512 * 1024 ** 2);
    expect(parseByteSize('1.5T')).toBe(1.5 * 1024 ** 4);
    expect(parseByteSize('3k')).toBe(3072);
    expect(parseByteSize('10 GB')).toBe(10 * 1024 ** 3);
    for (const bad of ['', 'lots', '-1', '1e3', '5 PiB', '9999999999T'])
      expect(parseByteSize(bad), bad).toBeNull();
  });

  it('refuses a value that is not a size, naming the setting', () => {
    expect(() => loadConfig({ CACHE_MAX_BYTES: 'lots' })).toThrow(ConfigError);
    expect(() => loadConfig({ CACHE_MAX_BYTES: 'lots' })).toThrow(/CACHE_MAX_BYTES/);
  });
});

describe('idRangeFor', () => {
  it('gives each site a 2^48-id slice starting at index * 2^48', () => {
    expect(idRangeFor(1)).toEqual({ start: 2n ** 48n, end: 2n * 2n ** 48n - 1n });
    const r = idRangeFor(5);
    expect(r.end - r.start + 1n).toBe(ID_RANGE_SIZE);
  });

  it('gives disjoint, adjacent ranges to different sites and fits the largest index in a bigint', () => {
    const indexes = [1, 2, 3, 100, 32766, 32767];
    const ranges = indexes.map(idRangeFor);
    for (let i = 0; i < ranges.length; i++) {
      for (let j = i + 1; j < ranges.length; j++) {
        const a = ranges[i]!;
        const b = ranges[j]!;
        expect(a.end < b.start || b.end < a.start, `${indexes[i]} vs ${indexes[j]}`).toBe(true);
      }
    }
    expect(idRangeFor(2).start).toBe(idRangeFor(1).end + 1n);
    expect(idRangeFor(32767).end).toBeLessThanOrEqual(2n ** 63n - 1n);
  });
});
