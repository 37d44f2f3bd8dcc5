import type { ObjectCopiesDto, PlacementRuleDto, VerifyReportDto } from '@tributary/shared';
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testBytes, uniqueName, type Federation, type FederationSite } from '@tributary/testkit';
import { expectStatus } from '../test/test-site';
import { until, useFederation } from '../test/federation';

/**
 * The scrub and the mover together on three real site processes (lsu, tulane, uno): a 1 s
 * replication cycle, the mover every 300 ms, the scrub every 500 ms at 50 MiB/s.
 */

const IDS = ['lsu', 'tulane', 'uno'];
const MiB = 1024 * 1024;
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe('scrub and repair across three sites', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;
  let uno: FederationSite;

  useFederation(
    {
      ids: IDS,
      cycleSeconds: 1,
      env: {
        PLACEMENT_INTERVAL_MS: '300',
        SCRUB_RATE_MIBS: '50',
        SCRUB_INTERVAL_MS: '500',
        SCRUB_REVERIFY_HOURS: '0',
        PEER_DOWN_MS: '2000',
      },
    },
    (started) => {
      fed = started;
      [lsu, tulane, uno] = IDS.map((id) => fed.site(id)) as [FederationSite, FederationSite, FederationSite];
    },
  );

  async function copiesAt(site: FederationSite, file: string): Promise<ObjectCopiesDto> {
    return expectStatus(
      await site.http.get<ObjectCopiesDto>('/api/v1/placement/copies', { query: { path: file } }),
      200,
    ).body;
  }

  /** `site`'s own copy row of `file`, from its catalog. */
  async function rowAt(
    site: FederationSite,
    file: string,
  ): Promise<{ status: string; key: string; error: string | null; verified_at: Date | null } | undefined> {
    const { dir, name } = { dir: path.posix.dirname(file), name: path.posix.basename(file) };
    const res = await site.query<{
      status: string;
      key: string;
      error: string | null;
      verified_at: Date | null;
    }>(
      `SELECT r.status::text AS status, r.physical_path AS key, r.error, r.verified_at FROM replicas r
         JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = $2 AND r.site_id = $3`,
      [dir, name, site.id],
    );
    return res.rows[0];
  }

  /** The file of `site`'s copy (as the local file-system driver lays it out; the test may know). */
  async function fileOf(site: FederationSite, file: string): Promise<string> {
    const key = (await rowAt(site, file))!.key;
    const shard = key.split('.')[0]!.slice(-2).padStart(2, '0');
    return path.join(fed.dataDir, 'sites', site.id, 'storage', 'objects', shard, key);
  }

  async function metric(site: FederationSite, line: string): Promise<number> {
    const text = expectStatus(await site.http.get('/metrics'), 200).text;
    const found = text.split('\n').find((l) => l.startsWith(line + ' '));
    return found ? Number(found.split(' ').pop()) : 0;
  }

  it('one copy corrupted and another deleted: the scrub finds both and the mover repairs them', async () => {
    const dir = `/projects/${uniqueName('scrub')}`;
    await lsu.client.createCollection(dir);
    const a = `${dir}/a.bin`;
    const b = `${dir}/b.bin`;
    const bytes = new Map([
      [a, testBytes(300_000, 11)],
      [b, testBytes(MiB + 5, 12)],
    ]);
    for (const [file, data] of bytes) await lsu.client.upload(file, data);
    expectStatus(
      await lsu.http.post<PlacementRuleDto>('/api/v1/placement/rules', { path: dir, copies: 3 }),
      201,
    );
    for (const file of bytes.keys()) {
      const everywhere = await until(
        async () =>
          (await Promise.all([lsu, tulane, uno].map((s) => copiesAt(s, file)))).every(
            (c) => c.copies.filter((x) => x.current).length === 3,
          ),
        60_000,
      );
      expect(everywhere, `${file} good at all three: ${JSON.stringify(await copiesAt(lsu, file))}`).toBe(
        true,
      );
    }

    // tulane's copy of a gets one byte changed, uno's copy of b goes.
    const original = bytes.get(a)!;
    const damaged = Buffer.from(original);
    damaged[4096] = damaged[4096]! ^ 0x5a;
    await writeFile(await fileOf(tulane, a), damaged);
    await rm(await fileOf(uno, b));

    // The scrub finds both (counted where it ran, logged with the error)...
    const found = await until(
      async () =>
        (await metric(tulane, 'tributary_scrub_mismatches_total{kind="mismatch"}')) >= 1 &&
        (await metric(uno, 'tributary_scrub_mismatches_total{kind="missing"}')) >= 1,
      30_000,
    );
    expect(found, 'both found by the scrub').toBe(true);
    expect(tulane.output()).toContain(
      `SHA-256 differs: found ${sha256(damaged)} expected ${sha256(original)}`,
    );
    expect(uno.output()).toMatch(/marked suspect: file missing/);
    expect(await metric(lsu, 'tributary_scrub_mismatches_total{kind="mismatch"}')).toBe(0);
    expect(await metric(lsu, 'tributary_scrub_bytes_total')).toBeGreaterThan(0);

    // ...and the mover repairs them from a good copy: good again, the right bytes on disk and served.
    for (const [site, file] of [
      [tulane, a],
      [uno, b],
    ] as const) {
      const repaired = await until(async () => {
        const row = await rowAt(site, file);
        if (row?.status !== 'good') return false;
        return sha256(await readFile(await fileOf(site, file))) === sha256(bytes.get(file)!);
      }, 30_000);
      expect(repaired, `${site.id} ${file} repaired: ${JSON.stringify(await rowAt(site, file))}`).toBe(true);
      const res = await site.client.download(file);
      expect(res.status).toBe(200);
      expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(bytes.get(file)!));
      const report = expectStatus(
        await site.http.request<VerifyReportDto>('POST', '/api/v1/placement/verify', {
          query: { path: file },
        }),
        200,
      ).body;
      expect(report.local).toBe('ok');
      expect(report.copies.find((c) => c.site === site.id)).toMatchObject({
        state: 'good',
        current: true,
        error: null,
      });
    }
    // Every site's view converges on three good copies of each.
    for (const file of bytes.keys()) {
      const settled = await until(
        async () =>
          (await Promise.all([lsu, tulane, uno].map((s) => copiesAt(s, file)))).every(
            (c) => c.copies.filter((x) => x.current && x.verifiedAt !== null).length === 3,
          ),
        30_000,
      );
      expect(settled, `${file}: ${JSON.stringify(await copiesAt(lsu, file))}`).toBe(true);
    }
  }, 180_000);
});
