import { prng, startSite, waitFor, type FederationSite, type SiteProcess } from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBelow } from '../test/storage';

/**
 * A compound resource whose site process is SIGKILLed while it archives, evicts and stages
 * (docs/storage.md, "Compound resources"), rounds of reads and new versions cut off by the kill:
 * after the restarts every object reads back as a version that was written (the last answered, or
 * one whose answer the kill took) and as the catalog says, every key is in a tier that holds it,
 * and the cache settles within its limit. COMPOUND_CRASH_ROUNDS and COMPOUND_CRASH_SEED (printed).
 */

const KiB = 1024;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('a compound resource through SIGKILLs', () => {
  let site: SiteProcess;
  let proc: FederationSite;
  let root: string;
  const CACHE_MAX = 1536 * KiB;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tributary-compound-crash-'));
    site = await startSite({
      env: {
        STORAGE_RESOURCES: JSON.stringify([
          { name: 'fast', kind: 'local', root: path.join(root, 'fast') },
          { name: 'tape', kind: 'local', root: path.join(root, 'tape') },
          { name: 'tiered', kind: 'compound', cache: 'fast', archive: 'tape', cacheMaxBytes: CACHE_MAX },
        ]),
        STORAGE_DEFAULT_RESOURCE: 'tiered',
        STORAGE_COMPOUND_PASS_MS: '50',
        SCRUB_RATE_MIBS: '0',
      },
    });
    proc = site.federation.sites[0]!;
  }, 120_000);

  afterAll(async () => {
    await site?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('loses no version and no byte', async () => {
    const seed = Number(process.env.COMPOUND_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const rounds = Number(process.env.COMPOUND_CRASH_ROUNDS ?? 3);
    console.log(`compound crash run: COMPOUND_CRASH_SEED=${seed}, ${rounds} rounds`);
    const random = prng(seed);
    const http = proc.http;
    expect((await http.post('/api/v1/namespace/collections', { path: '/projects/crash' })).status).toBe(201);
    /** The versions each object may read as: the last answered, and any whose answer was lost. */
    const candidates = new Map<string, Set<string>>();
    const names: string[] = [];
    for (let i = 0; i < 12; i++) {
      const p = `/projects/crash/c${i}.bin`;
      const bytes = randomBytes(256 * KiB + Math.floor(random() * 256 * KiB));
      const res = await http.request('PUT', '/api/v1/data', { query: { path: p }, body: bytes });
      expect(res.status).toBe(201);
      candidates.set(p, new Set([sha256(bytes)]));
      names.push(p);
    }
    for (let round = 0; round < rounds; round++) {
      const work: Array<Promise<void>> = [];
      for (let i = 0; i < 6; i++) {
        const p = names[Math.floor(random() * names.length)]!;
        if (random() < 0.5) {
          const bytes = randomBytes(Math.floor(random() * 400 * KiB));
          const digest = sha256(bytes);
          work.push(
            http
              .request('PUT', '/api/v1/data', { query: { path: p, overwrite: 'true' }, body: bytes })
              .then((res) => {
                if (res.status === 200) candidates.set(p, new Set([digest]));
              })
              .catch(() => void candidates.get(p)!.add(digest)),
          );
        } else {
          work.push(
            http
              .request('GET', '/api/v1/data', { query: { path: p }, headers: { Prefer: 'wait=30' } })
              .then(() => undefined)
              .catch(() => undefined),
          );
        }
      }
      await new Promise((r) => setTimeout(r, 100 + Math.floor(random() * 500)));
      await proc.kill('SIGKILL');
      await Promise.all(work);
      await proc.restart();
    }

    // Settled: nothing waits to be archived, the cache within its limit.
    const settled = await waitFor(async () => {
      const res = await site.query<{ pending: string; cached: string }>(
        `SELECT count(*) FILTER (WHERE archive = 'pending')::text AS pending,
                COALESCE(sum(size) FILTER (WHERE in_cache), 0)::text AS cached
           FROM compound_objects`,
      );
      return res.rows[0]!.pending === '0' && Number(res.rows[0]!.cached) <= CACHE_MAX;
    }, 30_000);
    const state = await site.query(
      `SELECT key, size::text, in_cache, archive, archive_error FROM compound_objects
        WHERE archive = 'pending' OR archive_error IS NOT NULL`,
    );
    expect(settled, JSON.stringify(state.rows)).toBe(true);
    for (const p of names) {
      const res = await http.request('GET', '/api/v1/data', {
        query: { path: p },
        headers: { Prefer: 'wait=60' },
      });
      expect(res.status, `${p}: ${res.text.slice(0, 200)}`).toBe(200);
      const got = sha256(res.bytes);
      expect(res.headers.get('etag'), p).toBe(`"${got}"`);
      expect([...candidates.get(p)!], p).toContain(got);
    }
    // Every copy's key has a row, and each row's tiers hold the key.
    const orphans = await site.query<{ physical_path: string }>(
      `SELECT r.physical_path FROM replicas r LEFT JOIN compound_objects c ON c.key = r.physical_path
        WHERE c.key IS NULL`,
    );
    expect(orphans.rows).toEqual([]);
    const files = async (dir: string) =>
      new Set((await filesBelow(path.join(root, dir, 'objects'))).map((f) => path.basename(f)));
    const cache = await files('fast');
    const archive = await files('tape');
    const rows = await site.query<{ key: string; in_cache: boolean; archive: string }>(
      'SELECT key, in_cache, archive FROM compound_objects',
    );
    for (const r of rows.rows) {
      if (r.in_cache) expect(cache.has(r.key), `${r.key} in the cache`).toBe(true);
      if (r.archive === 'archived') expect(archive.has(r.key), `${r.key} in the archive`).toBe(true);
    }
  }, 300_000);
});
