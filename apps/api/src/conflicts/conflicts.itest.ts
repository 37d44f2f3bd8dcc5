import type {
  BulkConflictDecisionDto,
  ConflictDto,
  EntryDto,
  ErrorBody,
  Page,
  TrashEntryDto,
} from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { sleep, type FederationSite } from '@tributary/testkit';
import { expectError, expectStatus } from '../test/test-site';
import { useTwoSites } from '../test/two-sites';

/**
 * Conflicts negotiated between two real site processes. The cycle is an hour long, so nothing is
 * exchanged until a test asks for it: each test makes its concurrent changes at both sites, then
 * runs the exchange and checks both sites.
 */
describe('conflict negotiation between real sites', () => {
  let lsu: FederationSite;
  let tulane: FederationSite;
  const { exchange } = useTwoSites((sites) => ({ lsu, tulane } = sites));

  async function conflictsAt(site: FederationSite, query: Record<string, string>): Promise<ConflictDto[]> {
    const res = expectStatus(await site.http.get<Page<ConflictDto>>('/api/v1/conflicts', { query }), 200);
    return res.body.items;
  }

  async function newDir(prefix: string): Promise<string> {
    const dir = `/projects/${uniqueName(prefix)}`;
    await lsu.client.createCollection(dir);
    return dir;
  }

  it('the same file renamed at two sites in one cycle: seen at both, decided at one, the decision at both', async () => {
    const dir = await newDir('rename');
    await lsu.client.upload(`${dir}/a.txt`, testBytes(1000, 1));
    await exchange();
    await lsu.client.move(`${dir}/a.txt`, `${dir}/from-lsu.txt`);
    await tulane.client.move(`${dir}/a.txt`, `${dir}/from-tulane.txt`);
    await exchange();

    for (const site of [lsu, tulane]) {
      const [c, ...more] = await conflictsAt(site, { path: dir });
      expect(more, site.id).toEqual([]);
      expect(c).toMatchObject({
        kind: 'update',
        table: 'data_objects',
        status: 'open',
        path: `${dir}/from-tulane.txt`,
      });
      expect(c!.versions.map((v) => [v.site, v.values?.name, v.provisionalWinner])).toEqual([
        ['lsu', 'from-lsu.txt', false],
        ['tulane', 'from-tulane.txt', true],
      ]);
      expect(c!.changedFields).toContain('name');
      // In people's terms: what happened, the entry, the readable facts (no internal columns).
      expect(c!.story).toBe('renamed to from-lsu.txt at lsu while renamed to from-tulane.txt at tulane');
      expect(c!.entry).toMatchObject({ type: 'file', name: 'from-tulane.txt', gone: false });
      expect(c!.differing).toEqual(['name']);
      expect(c!.versions[0]!.facts).toMatchObject({ name: 'from-lsu.txt', location: dir, size: 1000 });
      expect(c!.versions[0]!.facts).not.toHaveProperty('trash_id');
      expect(c!.contenders).toEqual([]);
      expect(c!.canDecide).toBe(true);
      expect(Date.parse(c!.deadline) - Date.parse(c!.openedAt)).toBe(24 * 3600_000);
    }
    const [open] = await conflictsAt(lsu, { path: dir });
    const lsuVersion = open!.versions.find((v) => v.site === 'lsu')!.index;
    const decided = expectStatus(
      await lsu.http.post<ConflictDto>(`/api/v1/conflicts/${open!.id}/decision`, {
        action: 'choose',
        version: lsuVersion,
      }),
      200,
    ).body;
    expect(decided).toMatchObject({
      status: 'decided',
      decision: { action: 'choose', site: 'lsu' },
      canDecide: false,
    });
    // Decided once: a second decision is refused, here and (after the exchange) at the other site.
    expectError(
      await lsu.http.post(`/api/v1/conflicts/${open!.id}/decision`, { action: 'keep' }),
      409,
      'CONFLICT_CLOSED',
    );
    await exchange();
    for (const site of [lsu, tulane]) {
      expect((await site.client.stat(`${dir}/from-lsu.txt`)).name, site.id).toBe('from-lsu.txt');
      const c = expectStatus(await site.http.get<ConflictDto>(`/api/v1/conflicts/${open!.id}`), 200).body;
      expect(c).toMatchObject({ status: 'decided', decision: { action: 'choose', site: 'lsu' } });
    }
    expect(await conflictsAt(tulane, { path: dir })).toEqual([]);
    expect((await conflictsAt(tulane, { path: dir, status: 'closed' })).map((c) => c.id)).toEqual([open!.id]);
    expectError(
      await tulane.http.post(`/api/v1/conflicts/${open!.id}/decision`, { action: 'keep' }),
      409,
      'CONFLICT_CLOSED',
    );
  });

  it('the same name created at two sites: both kept as name and name_1, then renamed by decision', async () => {
    const dir = await newDir('same');
    await exchange();
    const fromLsu = testBytes(2000, 2);
    const fromTulane = testBytes(3000, 3);
    await lsu.client.upload(`${dir}/data.csv`, fromLsu);
    await tulane.client.upload(`${dir}/data.csv`, fromTulane);
    await exchange();
    for (const site of [lsu, tulane]) {
      const names = (await site.client.listChildren({ path: dir })).items.map((e) => e.name).sort();
      expect(names, site.id).toEqual(['data.csv', 'data_1.csv']);
    }
    const [c] = await conflictsAt(tulane, { path: dir, kind: 'same-name' });
    expect(c).toMatchObject({ kind: 'same-name', detail: { name: 'data.csv', renamedTo: 'data_1.csv' } });
    expect(c!.path).toBe(`${dir}/data_1.csv`);
    // Both contenders as they are now: name, size, checksum and who created them.
    expect(c!.contenders.map((x) => [x.site, x.name, x.size, x.kept, x.createdBy]).sort()).toEqual(
      [
        ['lsu', 'data.csv', fromLsu.length, true, 'admin'],
        ['tulane', 'data_1.csv', fromTulane.length, false, 'admin'],
      ].sort(),
    );
    expect(c!.contenders.every((x) => x.checksum?.length)).toBe(true);
    expect(c!.story).toBe(
      'two files named data.csv were created at once (at lsu and tulane): the one from lsu keeps the name, the other was renamed data_1.csv',
    );
    expectError(
      await tulane.http.post(`/api/v1/conflicts/${c!.id}/decision`, { action: 'choose', version: 0 }),
      422,
      'VALIDATION_FAILED',
    );
    expectError(
      await tulane.http.post(`/api/v1/conflicts/${c!.id}/decision`, { action: 'rename' }),
      422,
      'VALIDATION_FAILED',
    );
    expectStatus(
      await tulane.http.post(`/api/v1/conflicts/${c!.id}/decision`, {
        action: 'rename',
        name: 'data-2nd.csv',
      }),
      200,
    );
    await exchange();
    const renamedBytes = (await lsu.client.stat(`${dir}/data-2nd.csv`)).size;
    const keptBytes = (await lsu.client.stat(`${dir}/data.csv`)).size;
    expect([keptBytes, renamedBytes].sort()).toEqual([fromLsu.length, fromTulane.length].sort());
  });

  it('an update at one site to what another deleted rescues it; purge waits until every site applied the delete', async () => {
    const dir = await newDir('trash');
    await lsu.client.upload(`${dir}/f.txt`, testBytes(500, 4));
    await lsu.client.upload(`${dir}/gone.txt`, testBytes(500, 5));
    await exchange();
    const deleted = await lsu.client.remove(`${dir}/f.txt`);
    await tulane.client.move(`${dir}/f.txt`, `${dir}/g.txt`);
    const gone = await lsu.client.remove(`${dir}/gone.txt`);
    const early = await lsu.http.delete<ErrorBody>(`/api/v1/trash/${gone.id}`);
    const err = expectError(early, 409, 'PURGE_NOT_YET');
    // The site that deleted it names the peers it is waiting for.
    expect(err.message).toContain('tulane has not applied the delete yet');
    expect(err.details).toEqual({ waitingFor: ['tulane'] });
    await exchange();
    for (const site of [lsu, tulane]) {
      expect((await site.client.stat(`${dir}/g.txt`)).name, site.id).toBe('g.txt');
      const [c] = await conflictsAt(site, { path: dir, kind: 'delete' });
      expect(c).toMatchObject({ kind: 'delete', path: `${dir}/g.txt` });
      expect(c!.versions.map((v) => v.trashed).sort()).toEqual([false, true]);
      expect(c!.story).toBe('renamed to g.txt at tulane after it was moved to the trash at lsu');
      expect(c!.versions.map((v) => v.facts.state).sort()).toEqual(['live', 'trashed']);
      const trash = (await site.http.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 1000 } }))
        .body;
      expect(trash.items.map((t) => t.id)).not.toContain(deleted.id);
    }
    // Once tulane has applied the delete (its acknowledgement says so), lsu marks it settled.
    let allowed = false;
    for (let i = 0; i < 20 && !allowed; i++) {
      await exchange();
      const trash = (await lsu.http.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 1000 } }))
        .body;
      allowed = trash.items.find((t) => t.id === gone.id)?.purgeAllowed ?? false;
      if (!allowed) await sleep(200);
    }
    expect(allowed).toBe(true);
    expectStatus(await lsu.http.delete(`/api/v1/trash/${gone.id}`), 204);
  });

  it("a collection's default policy decides its conflicts at one site, and the decision replicates", async () => {
    const dir = await newDir('policy');
    expectError(
      await lsu.http.put('/api/v1/conflicts/policies', { path: dir, kind: 'update', policy: 'prefer-site' }),
      422,
      'VALIDATION_FAILED',
    );
    expectStatus(
      await lsu.http.put('/api/v1/conflicts/policies', {
        path: dir,
        kind: 'update',
        policy: 'prefer-site',
        site: 'lsu',
      }),
      200,
    );
    await lsu.client.upload(`${dir}/p.txt`, testBytes(100, 6));
    await exchange();
    await lsu.client.move(`${dir}/p.txt`, `${dir}/p-lsu.txt`);
    await tulane.client.move(`${dir}/p.txt`, `${dir}/p-tulane.txt`);
    await exchange();
    await exchange();
    for (const site of [lsu, tulane]) {
      const [c] = await conflictsAt(site, { path: dir, status: 'all' });
      expect(c, site.id).toMatchObject({ status: 'decided', decision: { action: 'choose', by: null } });
      expect(c!.decision!.policy).toContain('prefer-site lsu');
      expect((await site.client.stat(`${dir}/p-lsu.txt`)).name).toBe('p-lsu.txt');
    }
    const policies = expectStatus(
      await tulane.http.get('/api/v1/conflicts/policies', { query: { path: dir } }),
      200,
    );
    expect(policies.body).toEqual([
      expect.objectContaining({ path: dir, kind: 'update', policy: 'prefer-site', site: 'lsu' }),
    ]);
  });

  it('many conflicts decided at once by filter; bad input gets clear errors', async () => {
    const dir = await newDir('bulk');
    await lsu.client.upload(`${dir}/1.txt`, testBytes(10, 7));
    await lsu.client.upload(`${dir}/2.txt`, testBytes(10, 8));
    await exchange();
    for (const n of ['1', '2']) {
      await lsu.client.move(`${dir}/${n}.txt`, `${dir}/${n}-lsu.txt`);
      await tulane.client.move(`${dir}/${n}.txt`, `${dir}/${n}-tulane.txt`);
    }
    await exchange();
    const summary = expectStatus(
      await lsu.http.get<{ open: number; byKind: Record<string, number> }>('/api/v1/conflicts/summary'),
      200,
    );
    expect(summary.body.byKind.update).toBeGreaterThanOrEqual(2);
    const res = expectStatus(
      await lsu.http.post<BulkConflictDecisionDto>('/api/v1/conflicts/decisions', {
        filter: { path: dir, kind: 'update' },
        action: 'prefer-site',
        site: 'lsu',
      }),
      200,
    );
    expect(res.body.decided).toHaveLength(2);
    expect(res.body.skipped).toEqual([]);
    await exchange();
    const names = (await tulane.client.listChildren({ path: dir })).items.map((e) => e.name).sort();
    expect(names).toEqual(['1-lsu.txt', '2-lsu.txt']);

    expectError(await lsu.http.get('/api/v1/conflicts/not-an-id'), 422, 'VALIDATION_FAILED');
    expectError(await lsu.http.get(`/api/v1/conflicts/${'0'.repeat(32)}`), 404, 'NOT_FOUND');
    expectError(
      await lsu.http.get('/api/v1/conflicts', { query: { status: 'maybe' } }),
      422,
      'VALIDATION_FAILED',
    );
    expectError(
      await lsu.http.post('/api/v1/conflicts/decisions', { filter: {}, action: 'prefer-site' }),
      422,
      'VALIDATION_FAILED',
    );
  });
  it('data updates go to the site holding the bytes, which takes them from one site per cycle (UPDATE_REJECTED)', async () => {
    const dir = await newDir('bytes');
    const path = `${dir}/d.bin`;
    const put = (site: FederationSite, seed: number) =>
      site.http.request<EntryDto>('PUT', '/api/v1/data', {
        query: { path, overwrite: true },
        headers: { 'content-type': 'application/octet-stream' },
        body: testBytes(5000 + seed, seed),
      });
    const bytesAt = async (site: FederationSite) =>
      Buffer.from(await (await site.client.download(path)).arrayBuffer());
    await lsu.client.upload(path, testBytes(4000, 1));
    await exchange();
    expect((await tulane.client.stat(path)).site).toBe('lsu');

    // tulane holds no copy: its update is forwarded to lsu, which applies it at once.
    const fromTulane = expectStatus(await put(tulane, 2), 200).body;
    expect(fromTulane).toMatchObject({ path, size: 5002, version: 2, site: 'lsu' });
    expect((await bytesAt(lsu)).equals(testBytes(5002, 2))).toBe(true);

    // Within the same cycle lsu refuses updates from anyone else, itself included...
    const refused = await put(lsu, 3);
    const error = expectError(refused, 409, 'UPDATE_REJECTED');
    expect(error.message).toContain('updated from tulane');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // ...but takes more from tulane.
    expect(expectStatus(await put(tulane, 4), 200).body).toMatchObject({ version: 3 });

    // Once lsu has run a cycle (offering tulane's update to every peer), another site may update.
    expectStatus(await lsu.http.post('/api/v1/replication/cycle'), 200);
    expect(expectStatus(await put(lsu, 5), 200).body).toMatchObject({ version: 4 });
    const relayed = expectError(await put(tulane, 6), 409, 'UPDATE_REJECTED');
    expect(relayed.message).toContain('updated from lsu');

    await exchange();
    for (const site of [lsu, tulane]) {
      expect(await site.client.stat(path), site.id).toMatchObject({ version: 4, size: 5005, site: 'lsu' });
      expect((await bytesAt(site)).equals(testBytes(5005, 5)), site.id).toBe(true);
      // One writer, one sequence of versions: nothing concurrent to record.
      expect(await conflictsAt(site, { path: dir, status: 'all' }), site.id).toEqual([]);
    }
    // Bad input is refused before anything is forwarded.
    expectError(
      await tulane.http.request('PUT', '/api/v1/data', {
        query: { path, overwrite: true },
        headers: { 'content-type': 'application/octet-stream', 'x-checksum-sha256': '0'.repeat(64) },
        body: testBytes(10, 7),
      }),
      422,
      'CHECKSUM_MISMATCH',
    );
    expect((await bytesAt(lsu)).equals(testBytes(5005, 5))).toBe(true);
  });
});
