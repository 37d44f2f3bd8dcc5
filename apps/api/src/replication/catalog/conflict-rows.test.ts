import { describe, expect, it } from 'vitest';
import {
  differsOnlyInAttributes,
  mergeConflictRows,
  provisionalWinner,
  UNDECIDED,
  type ConflictRow,
  type ConflictVersion,
} from './conflict-rows';
import { canonical } from './values';

function version(
  site: string,
  stamp: number,
  data: Record<string, unknown> | null = { trash_id: 0 },
): ConflictVersion {
  return { site, stamp, deleted: data === null, by: null, data };
}

function row(versions: ConflictVersion[], extra: Partial<ConflictRow> = {}): ConflictRow {
  const w = provisionalWinner('data_objects', versions);
  return {
    id: 'c1',
    kind: 'update',
    tbl: 'data_objects',
    row_key: '42',
    versions,
    winner_site: w.site,
    winner_stamp: w.stamp,
    detail: {},
    collection_id: '7',
    opened_at: new Date(1_000).toISOString(),
    deadline: new Date(1_000 + 86_400_000).toISOString(),
    ...UNDECIDED,
    ...extra,
  };
}

describe('provisionalWinner', () => {
  it('is the latest version, ties to the greater site', () => {
    expect(provisionalWinner('users', [version('lsu', 5), version('uno', 3)]).site).toBe('lsu');
    expect(provisionalWinner('users', [version('lsu', 5), version('uno', 5)]).site).toBe('uno');
  });

  it('prefers a live version over a later move to the trash (the update rescues it)', () => {
    const live = version('lsu', 1, { trash_id: 0 });
    const trashed = version('uno', 9, { trash_id: 77 });
    expect(provisionalWinner('data_objects', [live, trashed])).toBe(live);
    // Not for tables without a trash.
    expect(provisionalWinner('users', [live, trashed])).toBe(trashed);
  });
});

describe('mergeConflictRows', () => {
  const a = row([
    version('lsu', 1_000_000, { trash_id: 0, name: 'a' }),
    version('tulane', 2_000_000, { trash_id: 0, name: 'b' }),
  ]);
  const b = row([
    version('lsu', 1_000_000, { trash_id: 0, name: 'a' }),
    version('uno', 3_000_000, { trash_id: 0, name: 'c' }),
  ]);

  it('is the union of the versions, with the winner and the deadline derived from it', () => {
    const m = mergeConflictRows(a, b);
    expect(m.versions.map((v) => v.site)).toEqual(['lsu', 'tulane', 'uno']);
    expect(m.winner_site).toBe('uno');
    expect(m.opened_at).toBe(new Date(2_000).toISOString());
    expect(Date.parse(m.deadline) - Date.parse(m.opened_at)).toBe(86_400_000);
  });

  it('is commutative, so every site ends with the same record', () => {
    expect(canonical(mergeConflictRows(a, b))).toBe(canonical(mergeConflictRows(b, a)));
    const decided = {
      ...b,
      status: 'decided' as const,
      decision: 'keep',
      decided_at: new Date(5_000).toISOString(),
      decided_at_site: 'uno',
    };
    expect(canonical(mergeConflictRows(a, decided))).toBe(canonical(mergeConflictRows(decided, a)));
    expect(mergeConflictRows(a, decided).status).toBe('decided');
  });

  it('copies naming different collections merge to the same one either way (no ping-pong)', () => {
    const x = { ...a, collection_id: '9' };
    const y = { ...b, collection_id: '12' };
    expect(mergeConflictRows(x, y).collection_id).toBe('9');
    expect(mergeConflictRows(y, x).collection_id).toBe('9');
  });

  it('a delete seen at one site only makes the merged record a delete conflict', () => {
    const del = { ...b, kind: 'delete' as const };
    expect(mergeConflictRows(a, del).kind).toBe('delete');
    expect(mergeConflictRows(del, a).kind).toBe('delete');
  });
});

describe('attribute-only versions (docs/attributes.md)', () => {
  const file = {
    id: 42,
    name: 'run.sh',
    size: 10,
    checksum: 'ab',
    trash_id: 0,
    mode: 420,
    mtime_s: 1,
    mtime_nsec: 0,
    created_at: '2026-11-27T10:00:00.000+00:00',
    updated_at: '2026-11-27T10:00:01.000+00:00',
    updated_by: 1,
  };

  it('two versions that differ in mode, mtime and bookkeeping only', () => {
    const chmod = { ...file, mode: 493, updated_at: '2026-11-27T10:00:02.000+00:00', updated_by: 2 };
    const touch = { ...file, mtime_s: 5, mtime_nsec: 7, updated_at: '2026-11-27T10:00:03.000+00:00' };
    expect(differsOnlyInAttributes('data_objects', chmod, touch)).toBe(true);
    // The same time written in another zone is the same time.
    expect(
      differsOnlyInAttributes('data_objects', file, { ...chmod, created_at: '2026-11-27T10:00:00.000Z' }),
    ).toBe(true);
  });

  it('anything else makes it an ordinary conflict', () => {
    expect(differsOnlyInAttributes('data_objects', file, { ...file, mode: 493, name: 'run2.sh' })).toBe(
      false,
    );
    expect(differsOnlyInAttributes('data_objects', file, { ...file, size: 11, checksum: 'cd' })).toBe(false);
    expect(differsOnlyInAttributes('data_objects', file, { ...file, trash_id: 7 })).toBe(false);
    expect(differsOnlyInAttributes('data_objects', file, null)).toBe(false);
    expect(differsOnlyInAttributes('users', { id: 1, email: 'a' }, { id: 1, email: 'a' })).toBe(false);
  });

  it("a folder's path follows its parent and name: not compared", () => {
    const dir = { id: 7, parent_id: 1, name: 'd', path: '/a/d', mode: 493, trash_id: 0 };
    expect(differsOnlyInAttributes('collections', dir, { ...dir, path: '/b/d', mode: 448 })).toBe(true);
    expect(differsOnlyInAttributes('collections', dir, { ...dir, parent_id: 2, path: '/b/d' })).toBe(false);
  });
});
