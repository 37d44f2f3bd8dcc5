import { describe, expect, it } from 'vitest';
import type { ConflictVersionDto } from '@tributary/shared';
import {
  conflictDiff,
  deadlineText,
  formatValue,
  mergeValue,
  provisionalWinner,
  sitesOf,
} from './conflictDiff';

function version(
  index: number,
  site: string,
  values: Record<string, unknown> | null,
  winner = false,
): ConflictVersionDto {
  return {
    index,
    site,
    at: '2026-11-21T10:00:00Z',
    deleted: false,
    trashed: false,
    by: 'admin',
    values,
    provisionalWinner: winner,
  };
}

const rename = {
  versions: [
    version(0, 'lsu', { id: '1', name: 'from-lsu.txt', size: 1000, owner: 'admin' }),
    version(1, 'tulane', { id: '1', name: 'from-tulane.txt', size: 1000, owner: 'admin' }, true),
  ],
  changedFields: ['name'],
};

describe('conflictDiff', () => {
  it('puts changed fields first, hides bookkeeping, keeps the rest by name', () => {
    expect(conflictDiff(rename)).toEqual([
      { field: 'name', values: ['from-lsu.txt', 'from-tulane.txt'], differs: true },
      { field: 'owner', values: ['admin', 'admin'], differs: false },
      { field: 'size', values: ['1000', '1000'], differs: false },
    ]);
  });

  it('marks fields that differ even when the server did not list them', () => {
    const rows = conflictDiff({
      versions: [version(0, 'a', { x: 1, y: 'p' }), version(1, 'b', { x: 2, y: 'p' })],
      changedFields: [],
    });
    expect(rows.find((r) => r.field === 'x')?.differs).toBe(true);
    expect(rows[0]!.field).toBe('x');
  });

  it('shows a deleted or trashed version', () => {
    const del = { ...version(1, 'b', null), deleted: true };
    const rows = conflictDiff({ versions: [version(0, 'a', { name: 'f' }), del], changedFields: ['name'] });
    expect(rows).toEqual([{ field: 'name', values: ['f', 'deleted'], differs: true }]);
  });
});

describe('helpers', () => {
  it('formats values', () => {
    expect(formatValue(null)).toBe('—');
    expect(formatValue('')).toBe('""');
    expect(formatValue({ a: 1 })).toBe('{"a":1}');
    expect(formatValue(true)).toBe('true');
  });

  it('finds the provisional winner and the sites', () => {
    expect(provisionalWinner(rename)?.site).toBe('tulane');
    expect(sitesOf([rename, { versions: [version(0, 'uno', {})] }])).toEqual(['lsu', 'tulane', 'uno']);
  });

  it('merges the picked values', () => {
    expect(mergeValue(rename, { name: 0, size: 1 })).toEqual({ name: 'from-lsu.txt', size: 1000 });
  });

  it('describes the time to the deadline', () => {
    const now = new Date('2026-11-21T10:00:00Z');
    expect(deadlineText('2026-11-22T09:10:00Z', now)).toBe('23 h 10 min left');
    expect(deadlineText('2026-11-21T10:05:00Z', now)).toBe('5 min left');
    expect(deadlineText('2026-11-21T09:00:00Z', now)).toBe('past the deadline');
  });
});
