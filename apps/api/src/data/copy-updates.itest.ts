import { createHash } from 'node:crypto';
import { testBytes, uniqueName, type FederationSite } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { addCopy, copyRows, useSites } from '../test/copies';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * An update of the bytes makes every other copy stale, and no site serves the old bytes once it has
 * the update (docs/placement.md, "Updates, deletes and fewer copies"). Three real site processes; an
 * object written at lsu gets a second good copy at uno, made by the test (file and copy row, as the
 * mover would leave them). lsu holds the bytes (the first site by id with a good copy): an update
 * made at uno or tulane is forwarded there.
 */
describe('updates of an object with copies at several sites', () => {
  const { fed, exchange } = useSites(['lsu', 'tulane', 'uno']);

  async function objectAtLsuAndUno(seed: number): Promise<{ id: string; path: string; old: Buffer }> {
    const [lsu, , uno] = fed().sites;
    const dir = `/projects/${uniqueName('updates')}`;
    await lsu!.client.createCollection(dir);
    const old = testBytes(40_000, seed);
    const entry = await lsu!.client.upload(`${dir}/f.bin`, old);
    await exchange();
    await addCopy(fed(), lsu!, uno!, entry.id);
    await exchange();
    return { id: entry.id, path: `${dir}/f.bin`, old };
  }

  /** The status and bytes a read at `site` gives (503 while a site's catalog waits for an update). */
  async function read(site: FederationSite, path: string): Promise<{ status: number; bytes: Buffer }> {
    const res = await site.http.get('/api/v1/data', { query: { path } });
    return { status: res.status, bytes: Buffer.from(res.bytes ?? new Uint8Array()) };
  }

  /**
   * After the exchange: every site reads the new bytes (several times), and no site's catalog has a
   * good copy of the old ones: uno's copy is stale, or good again with the new bytes where uno's mover
   * (when it runs in this build) has already refreshed it.
   */
  async function everySiteHasTheUpdate(id: string, path: string, old: Buffer, now: Buffer): Promise<void> {
    for (const site of fed().sites) {
      for (let i = 0; i < 3; i++) {
        const got = await read(site, path);
        expect(got.status, site.id).toBe(200);
        expect(got.bytes.equals(old), `${site.id} served the old bytes`).toBe(false);
        expect(got.bytes.equals(now), `${site.id} served other bytes`).toBe(true);
      }
      const rows = await copyRows(site, id);
      expect(rows.map((r) => r.site_id)).toEqual(['lsu', 'uno']);
      expect(rows[0]).toMatchObject({ status: 'good', checksum: sha256(now) });
      if (rows[1]!.status === 'good') expect(rows[1]!.checksum).toBe(sha256(now));
      else expect(rows[1]!.status).toBe('stale');
    }
  }

  /** At the holding site, right after the update: its copy has the new bytes and uno's is stale. */
  async function staleAtTheHolder(id: string, now: Buffer): Promise<void> {
    const rows = await copyRows(fed().site('lsu'), id);
    expect(rows.map((r) => `${r.site_id}:${r.status}`)).toEqual(['lsu:good', 'uno:stale']);
    expect(rows[0]!.checksum).toBe(sha256(now));
  }

  it('updated at the holding site: after the exchange every site reads the new bytes; uno does not serve its old copy', async () => {
    const lsu = fed().site('lsu');
    const { id, path, old } = await objectAtLsuAndUno(1);
    const now = testBytes(41_000, 2);
    await lsu.client.upload(path, now, { overwrite: true });
    await staleAtTheHolder(id, now);
    const atLsu = await read(lsu, path);
    expect(atLsu.bytes.equals(now)).toBe(true);
    await exchange();
    await everySiteHasTheUpdate(id, path, old, now);
  }, 180_000);

  it('updated at uno (forwarded to lsu): uno stops serving its old copy at once, and every site reads the new bytes after the exchange', async () => {
    const uno = fed().site('uno');
    const { id, path, old } = await objectAtLsuAndUno(3);
    const now = testBytes(39_000, 4);
    await uno.client.upload(path, now, { overwrite: true });
    await staleAtTheHolder(id, now);
    // Before the exchange uno's catalog does not know the new bytes yet: it may answer 503 (try
    // again), never its copy of the old ones.
    const meanwhile = await read(uno, path);
    expect(meanwhile.bytes.equals(old), 'uno served its old copy after forwarding the update').toBe(false);
    expect([200, 503]).toContain(meanwhile.status);
    if (meanwhile.status === 200) expect(meanwhile.bytes.equals(now)).toBe(true);
    await exchange();
    await everySiteHasTheUpdate(id, path, old, now);
  }, 180_000);

  it('updated at tulane, which holds no copy (forwarded to lsu): the copy at uno goes stale everywhere', async () => {
    const tulane = fed().site('tulane');
    const { id, path, old } = await objectAtLsuAndUno(5);
    const now = testBytes(40_000, 6);
    await tulane.client.upload(path, now, { overwrite: true });
    await staleAtTheHolder(id, now);
    await exchange();
    await everySiteHasTheUpdate(id, path, old, now);
  }, 180_000);
});
