import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { catalogEntryOf, loadStorageConfig, StorageConfigError } from './resource-config';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tributary-resource-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const s3 = (extra: Record<string, unknown> = {}) =>
  JSON.stringify([
    { name: 'archive', kind: 's3', endpoint: 'http://127.0.0.1:8333', bucket: 'trib-lsu', ...extra },
  ]);

describe('storage resources from the environment', () => {
  it('has only the built-in local resource by default', () => {
    const c = loadStorageConfig({}, '/srv/trib/storage');
    expect(c).toEqual({
      resources: [{ name: 'default', kind: 'local', root: '/srv/trib/storage' }],
      defaultResource: 'default',
      checkIntervalMs: 15_000,
      compoundPassMs: 1000,
    });
  });

  it('puts the site id in a local root for {site}', () => {
    const c = loadStorageConfig(
      {
        SITE_ID: 'tulane',
        STORAGE_RESOURCES: JSON.stringify([{ name: 'bulk', kind: 'local', root: '/data/{site}/bulk' }]),
      },
      '/srv',
    );
    expect(c.resources[1]).toEqual({ name: 'bulk', kind: 'local', root: '/data/tulane/bulk' });
  });

  it('reads a compound resource: a local cache in front of an archive, with its limit', () => {
    const c = loadStorageConfig(
      {
        STORAGE_RESOURCES: JSON.stringify([
          { name: 'fast', kind: 'local', root: '/fast' },
          { name: 'tape', kind: 'local', root: '/tape' },
          { name: 'tiered', kind: 'compound', cache: 'fast', archive: 'tape', cacheMaxBytes: '2GiB' },
        ]),
        STORAGE_DEFAULT_RESOURCE: 'tiered',
      },
      '/srv',
    );
    const r = c.resources[3]!;
    expect(r).toEqual({
      name: 'tiered',
      kind: 'compound',
      cache: 'fast',
      archive: 'tape',
      cacheMaxBytes: 2 * 1024 ** 3,
    });
    expect(catalogEntryOf(r)).toEqual({
      name: 'tiered',
      driver: 'compound',
      rootPath: 'compound://fast+tape',
      settings: { cache: 'fast', archive: 'tape', cacheMaxBytes: 2 * 1024 ** 3 },
    });
  });

  it('reads an s3 resource with keys from the environment, never printing them', () => {
    const c = loadStorageConfig(
      {
        STORAGE_RESOURCES: s3({ prefix: 'lsu/' }),
        STORAGE_DEFAULT_RESOURCE: 'archive',
        STORAGE_ARCHIVE_ACCESS_KEY_ID: 'AKID-visible-nowhere',
        STORAGE_ARCHIVE_SECRET_ACCESS_KEY: 'secret-visible-nowhere',
        STORAGE_CHECK_SECONDS: '2',
      },
      '/srv',
    );
    expect(c.defaultResource).toBe('archive');
    expect(c.checkIntervalMs).toBe(2000);
    const r = c.resources[1]!;
    if (r.kind !== 's3') throw new Error('not s3');
    expect(r.settings).toEqual({
      endpoint: 'http://127.0.0.1:8333',
      bucket: 'trib-lsu',
      region: 'us-east-1',
      prefix: 'lsu/',
      forcePathStyle: true,
      createBucket: false,
      partSizeMiB: 16,
      partsInParallel: 4,
    });
    expect(r.credentials.reveal()).toEqual({
      accessKeyId: 'AKID-visible-nowhere',
      secretAccessKey: 'secret-visible-nowhere',
    });
    for (const shown of [
      JSON.stringify(c),
      inspect(c, { depth: 10 }),
      String(JSON.stringify(catalogEntryOf(r))),
    ]) {
      expect(shown).not.toContain('visible-nowhere');
    }
    expect(catalogEntryOf(r)).toEqual({
      name: 'archive',
      driver: 's3',
      rootPath: 's3://trib-lsu/lsu/',
      settings: {
        endpoint: 'http://127.0.0.1:8333',
        bucket: 'trib-lsu',
        region: 'us-east-1',
        prefix: 'lsu/',
      },
    });
  });

  it('reads keys from a file only its owner may read', () => {
    const file = path.join(dir, 'keys');
    writeFileSync(file, '# archive\naws_access_key_id = AKID1\nsecret_access_key=SECRET1\n', { mode: 0o600 });
    chmodSync(file, 0o600);
    const c = loadStorageConfig({ STORAGE_RESOURCES: s3({ credentialsFile: file }) }, '/srv');
    const r = c.resources[1]!;
    if (r.kind !== 's3') throw new Error('not s3');
    expect(r.credentials.reveal()).toEqual({ accessKeyId: 'AKID1', secretAccessKey: 'SECRET1' });
    chmodSync(file, 0o644);
    expect(() => loadStorageConfig({ STORAGE_RESOURCES: s3({ credentialsFile: file }) }, '/srv')).toThrow(
      /may be read by others \(mode 644\); chmod 600 it/,
    );
  });

  it('refuses every mistake with the setting and field named', () => {
    const refuse = (env: NodeJS.ProcessEnv, message: RegExp) => {
      let err: unknown;
      try {
        loadStorageConfig(env, '/srv');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(StorageConfigError);
      expect((err as Error).message).toMatch(message);
    };
    refuse({ STORAGE_RESOURCES: '[{' }, /STORAGE_RESOURCES: not JSON/);
    refuse(
      { STORAGE_RESOURCES: s3() },
      /set STORAGE_ARCHIVE_ACCESS_KEY_ID and STORAGE_ARCHIVE_SECRET_ACCESS_KEY/,
    );
    refuse({ STORAGE_RESOURCES: s3({ bucket: 'No_Such' }) }, /STORAGE_RESOURCES\.0\.bucket/);
    refuse({ STORAGE_RESOURCES: s3({ endpoint: 'nowhere' }) }, /STORAGE_RESOURCES\.0\.endpoint/);
    refuse({ STORAGE_RESOURCES: s3({ secret: 'x' }) }, /STORAGE_RESOURCES\.0/);
    refuse(
      { STORAGE_RESOURCES: JSON.stringify([{ name: 'default', kind: 'local', root: '/x' }]) },
      /"default" is used twice/,
    );
    refuse(
      { STORAGE_DEFAULT_RESOURCE: 'tape' },
      /STORAGE_DEFAULT_RESOURCE: "tape" is not one of the resources/,
    );
    refuse({ STORAGE_CHECK_SECONDS: '-1' }, /STORAGE_CHECK_SECONDS/);
    const compound = (extra: Record<string, unknown>, more: object[] = []) =>
      JSON.stringify([
        { name: 'fast', kind: 'local', root: '/fast' },
        { name: 'tape', kind: 'local', root: '/tape' },
        ...more,
        { name: 'tiered', kind: 'compound', cache: 'fast', archive: 'tape', cacheMaxBytes: 1000, ...extra },
      ]);
    refuse(
      { STORAGE_RESOURCES: compound({ cache: 'nope' }) },
      /STORAGE_RESOURCES\.2\.cache: "nope" is not one/,
    );
    refuse({ STORAGE_RESOURCES: compound({ archive: 'fast' }) }, /STORAGE_RESOURCES\.2\.archive/);
    refuse({ STORAGE_RESOURCES: compound({ cacheMaxBytes: 'lots' }) }, /STORAGE_RESOURCES\.2\.cacheMaxBytes/);
    refuse(
      { STORAGE_RESOURCES: compound({}), STORAGE_DEFAULT_RESOURCE: 'fast' },
      /STORAGE_RESOURCES\.2\.cache: "fast" is STORAGE_DEFAULT_RESOURCE/,
    );
    refuse(
      {
        STORAGE_RESOURCES: compound({}, [
          { name: 'other', kind: 'compound', cache: 'fast', archive: 'tape', cacheMaxBytes: 5 },
        ]),
      },
      /"fast" is already a part of the compound "other"/,
    );
    refuse({ STORAGE_COMPOUND_PASS_MS: '0' }, /STORAGE_COMPOUND_PASS_MS/);
  });
});
