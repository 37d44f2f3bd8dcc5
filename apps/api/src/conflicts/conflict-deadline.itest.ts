import type { ConflictDto, EntryDto, Page } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordUpdateConflict } from '@tributary/testkit';
import { testBytes, uniqueName } from '@tributary/testkit';
import { expectError, expectStatus, startTestSite, type TestClient, type TestSite } from '../test/test-site';
import { ConflictClock } from './conflicts.service';

/**
 * The deadline, with the API's clock moved forward: an open conflict past its deadline is final (its
 * provisional winner stands) and can no longer be decided. The record is written as the engine
 * writes one (conflicts.itest.ts covers detection between real sites).
 */
describe('conflict deadline', () => {
  let site: TestSite;
  let admin: TestClient;
  let clock: ConflictClock;
  let id: string;

  beforeAll(async () => {
    site = await startTestSite();
    admin = await site.admin();
    clock = site.siteApp.app.get(ConflictClock);
    const dir = `/projects/${uniqueName('deadline')}`;
    expectStatus(await admin.post('/api/v1/namespace/collections', { path: dir }), 201);
    const put = await admin.put<EntryDto>(`/api/v1/data`, undefined, {
      query: { path: `${dir}/x.txt` },
      body: testBytes(10, 1),
      headers: { 'content-type': 'application/octet-stream' },
    });
    const entry = expectStatus(put, 201).body;
    id = await recordUpdateConflict(site, entry.id, 'a'.repeat(32));
  }, 60_000);

  afterAll(async () => {
    await site?.close();
  });

  it('is open before its deadline and final after it; a final conflict cannot be decided', async () => {
    const before = expectStatus(await admin.get<ConflictDto>(`/api/v1/conflicts/${id}`), 200).body;
    expect(before).toMatchObject({ status: 'open', canDecide: true, changedFields: ['content_type'] });
    clock.offsetMs = 25 * 3600_000;
    try {
      const after = expectStatus(await admin.get<ConflictDto>(`/api/v1/conflicts/${id}`), 200).body;
      expect(after).toMatchObject({ status: 'final', canDecide: false, decision: null });
      const err = expectError(
        await admin.post(`/api/v1/conflicts/${id}/decision`, { action: 'keep' }),
        409,
        'CONFLICT_CLOSED',
      );
      expect(err.message).toMatch(/deadline passed/);
      const open = expectStatus(await admin.get<Page<ConflictDto>>('/api/v1/conflicts'), 200).body;
      expect(open.items.map((c) => c.id)).not.toContain(id);
      const final = expectStatus(
        await admin.get<Page<ConflictDto>>('/api/v1/conflicts', { query: { status: 'final' } }),
        200,
      ).body;
      expect(final.items.map((c) => c.id)).toContain(id);
    } finally {
      clock.offsetMs = 0;
    }
  });

  it('a merged value is validated: only the fields that may be merged, with plain values', async () => {
    expectError(
      await admin.post(`/api/v1/conflicts/${id}/decision`, { action: 'merge', value: { owner_id: 1 } }),
      422,
      'VALIDATION_FAILED',
    );
    expectError(
      await admin.post(`/api/v1/conflicts/${id}/decision`, {
        action: 'merge',
        value: { content_type: { a: 1 } },
      }),
      422,
      'VALIDATION_FAILED',
    );
    expectError(
      await admin.post(`/api/v1/conflicts/${id}/decision`, { action: 'choose', version: 7 }),
      422,
      'VALIDATION_FAILED',
    );
    const merged = expectStatus(
      await admin.post<ConflictDto>(`/api/v1/conflicts/${id}/decision`, {
        action: 'merge',
        value: { content_type: 'text/csv' },
      }),
      200,
    ).body;
    expect(merged).toMatchObject({
      status: 'decided',
      decision: { action: 'merge', value: { content_type: 'text/csv' } },
    });
    const ct = await site.query<{ content_type: string }>(
      'SELECT content_type FROM data_objects WHERE id = $1',
      [merged.recordId],
    );
    expect(ct.rows[0]!.content_type).toBe('text/csv');
  });
});
