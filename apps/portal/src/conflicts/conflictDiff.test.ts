import { describe, expect, it } from 'vitest';
import type { ConflictDto, ConflictFactsDto, ConflictVersionDto } from '@tributary/shared';
import {
  conflictDiff,
  deadlineText,
  groupByEntry,
  mergeValue,
  provisionalWinner,
  sitesOf,
} from './conflictDiff';
import { relativeTime } from '../format';

function facts(over: Partial<ConflictFactsDto> = {}): ConflictFactsDto {
  return {
    name: null,
    location: null,
    size: null,
    checksum: null,
    contentType: null,
    attribute: null,
    value: null,
    unit: null,
    other: {},
    state: 'live',
    ...over,
  };
}

function version(
  index: number,
  site: string,
  values: Record<string, unknown> | null,
  f: Partial<ConflictFactsDto>,
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
    facts: facts(f),
    provisionalWinner: winner,
  };
}

const file = { location: '/p', size: 1000, checksum: 'sha256:aa', contentType: 'text/plain' };
const rename = {
  table: 'data_objects',
  versions: [
    version(0, 'lsu', { id: '1', name: 'from-lsu.txt', trash_id: 0 }, { ...file, name: 'from-lsu.txt' }),
    version(1, 'tulane', { id: '1', name: 'from-tulane.txt' }, { ...file, name: 'from-tulane.txt' }, true),
  ],
  differing: ['name'],
};

describe('conflictDiff', () => {
  it('shows facts people compare, the differing one first, never internal columns', () => {
    const rows = conflictDiff(rename);
    expect(rows.map((r) => [r.label, r.values, r.differs])).toEqual([
      ['Name', ['from-lsu.txt', 'from-tulane.txt'], true],
      ['Folder', ['/p', '/p'], false],
      ['Size', ['1000 B', '1000 B'], false],
      ['Checksum', ['sha256:aa', 'sha256:aa'], false],
      ['Type', ['text/plain', 'text/plain'], false],
      ['State', ['in place', 'in place'], false],
    ]);
    expect(rows.map((r) => r.field)).not.toContain('trash_id');
  });

  it('shows a trashed version and an attribute value with its unit', () => {
    const rows = conflictDiff({
      table: 'metadata_triples',
      versions: [
        version(0, 'a', {}, { attribute: 'temp', value: '12', unit: 'K' }),
        version(1, 'b', {}, { attribute: 'temp', value: '13', unit: 'K', state: 'trashed' }),
      ],
      differing: ['value', 'state'],
    });
    expect(rows.map((r) => [r.label, r.values])).toEqual([
      ['Value', ['12', '13']],
      ['State', ['in place', 'in the trash']],
      ['Attribute', ['temp', 'temp']],
      ['Unit', ['K', 'K']],
    ]);
  });

  it('says which facts may be merged, by the record field they set', () => {
    const rows = conflictDiff({
      table: 'users',
      versions: [
        version(0, 'a', { display_name: 'A' }, { other: { 'display name': 'A', username: 'x' } }),
        version(1, 'b', { display_name: 'B' }, { other: { 'display name': 'B', username: 'x' } }),
      ],
      differing: ['other.display name'],
    });
    expect(rows.map((r) => [r.label, r.mergeField])).toEqual([
      ['Display name', 'display_name'],
      ['Username', null],
      ['State', null],
    ]);
  });
});

describe('helpers', () => {
  it('finds the provisional winner and the sites', () => {
    expect(provisionalWinner(rename)?.site).toBe('tulane');
    expect(sitesOf([rename, { versions: [version(0, 'uno', {}, {})] }])).toEqual(['lsu', 'tulane', 'uno']);
  });

  it('merges the picked values by record field', () => {
    expect(mergeValue(rename, { name: 0 })).toEqual({ name: 'from-lsu.txt' });
  });

  it('groups conflicts about one file (its rename and its attributes), keeping the order of first appearance', () => {
    const c = (id: string, table: string, recordId: string, path: string | null, on: string | null = null) =>
      ({ id, table, recordId, entry: { path, on } }) as ConflictDto;
    const groups = groupByEntry([
      c('1', 'data_objects', 'a', '/p/x.csv'),
      c('2', 'data_objects', 'b', '/p/y.csv'),
      c('3', 'metadata_triples', 't', '/p/x.csv', '/p/x.csv'),
      c('4', 'users', 'u', null),
      c('5', 'users', 'u', null),
    ]);
    expect(groups.map((g) => g.items.map((x) => x.id))).toEqual([['1', '3'], ['2'], ['4', '5']]);
  });

  it('describes times relative to now and the time to the deadline', () => {
    const now = new Date('2026-11-21T10:00:00Z');
    expect(relativeTime('2026-11-21T09:55:00Z', now)).toMatch(/5 minutes ago/);
    expect(relativeTime('2026-11-21T13:00:00Z', now)).toMatch(/in 3 hours/);
    expect(deadlineText('2026-11-22T09:10:00Z', now)).toBe('23 h 10 min left');
    expect(deadlineText('2026-11-21T10:05:00Z', now)).toBe('5 min left');
    expect(deadlineText('2026-11-21T09:00:00Z', now)).toBe('past the deadline');
  });
});
