import { describe, expect, it } from 'vitest';
import type { ConflictContenderDto } from '@tributary/shared';
import type { ConflictVersion } from '../replication/catalog/conflict-rows';
import { conflictView, type ViewLookups, type ViewRecord } from './conflict-view';

const lookups: ViewLookups = {
  collections: new Map([
    ['10', '/projects/run'],
    ['11', '/projects/other'],
  ]),
  objects: new Map([['20', '/projects/run/a.csv']]),
  users: new Map([
    ['1', 'admin'],
    ['2', 'alice'],
  ]),
  groups: new Map([['30', 'lab']]),
};

function file(site: string, data: Record<string, unknown> | null, deleted = false): ConflictVersion {
  return { site, stamp: 1_700_000_000_000_000, deleted, by: '2', data };
}

const row = {
  id: '20',
  collection_id: '10',
  name: 'a.csv',
  size: 100,
  checksum: 'sha256:aa',
  content_type: 'text/csv',
  trash_id: 0,
  created_at: '2026-11-27T10:00:00.000Z',
  updated_at: '2026-11-27T10:00:00.000Z',
  updated_by: 2,
};

function record(over: Partial<ViewRecord>): ViewRecord {
  return {
    kind: 'update',
    tbl: 'data_objects',
    path: '/projects/run/b.csv',
    exists: true,
    versions: [],
    detail: {},
    ...over,
  };
}

describe('conflictView', () => {
  it('tells a rename against a rename in names, hiding internal columns', () => {
    const view = conflictView(
      record({
        versions: [
          file('tulane', { ...row, name: 'b.csv', updated_at: '2026-11-27T11:00:00.000Z' }),
          file('uno', { ...row, name: 'c.csv', updated_at: '2026-11-27T11:00:01.000Z' }),
        ],
      }),
      1,
      lookups,
      [],
    );
    expect(view.story).toBe('renamed to b.csv at tulane while renamed to c.csv at uno');
    expect(view.differing).toEqual(['name']);
    expect(view.entry).toMatchObject({ type: 'file', name: 'c.csv', gone: false, label: 'file c.csv' });
    expect(view.facts[0]).toMatchObject({
      name: 'b.csv',
      location: '/projects/run',
      size: 100,
      state: 'live',
    });
    expect(Object.keys(view.facts[0]!)).not.toContain('trash_id');
  });

  it('tells a change against a move to the trash', () => {
    const view = conflictView(
      record({
        kind: 'delete',
        versions: [
          file('lsu', { ...row, size: 2048, checksum: 'sha256:bb' }),
          file('uno', { ...row, trash_id: '281474976710813' }),
        ],
      }),
      0,
      lookups,
      [],
    );
    expect(view.story).toBe('given new contents (2.0 KiB) at lsu after it was moved to the trash at uno');
    expect(view.differing).toEqual(['size', 'checksum', 'state']);
  });

  it('names a metadata conflict by its attribute and the file it is on', () => {
    const triple = { id: '40', object_id: '20', attribute: 'temperature', value_type: 'number', unit: 'K' };
    const view = conflictView(
      record({
        tbl: 'metadata_triples',
        path: '/projects/run/a.csv',
        versions: [
          file('lsu', { ...triple, value: '12', num: 12 }),
          file('tulane', { ...triple, value: '13', num: 13 }),
        ],
      }),
      1,
      lookups,
      [],
    );
    expect(view.entry.label).toBe('attribute temperature of /projects/run/a.csv');
    expect(view.story).toBe('set to 12 K at lsu while set to 13 K at tulane');
    expect(view.differing).toEqual(['value']);
  });

  it('says what an entry that is gone was', () => {
    const view = conflictView(
      record({
        path: null,
        exists: false,
        versions: [file('lsu', { ...row, name: 'x.csv' }), file('uno', { ...row, name: 'y.csv' })],
      }),
      0,
      lookups,
      [],
    );
    expect(view.entry.label).toBe('file x.csv (no longer in the catalog; it was in /projects/run)');
    expect(view.entry.path).toBe('/projects/run/x.csv');
    expect(view.entry.gone).toBe(true);
  });

  it('counts every contender of a same-name contest', () => {
    const contender = (site: string, name: string, kept: boolean): ConflictContenderDto => ({
      recordId: site,
      site,
      createdAt: '2026-11-27T10:00:00.000Z',
      createdBy: 'alice',
      name,
      path: `/projects/run/${name}`,
      size: 10,
      checksum: 'sha256:cc',
      kept,
      trashed: false,
      gone: false,
    });
    const view = conflictView(
      record({
        kind: 'same-name',
        path: '/projects/run/run_1.tar.gz',
        detail: { name: 'run.tar.gz', contenders: 3 },
        versions: [
          file('lsu', { id: '1', name: 'run.tar.gz', collection_id: '10' }),
          file('tulane', { id: '2', name: 'run.tar.gz', collection_id: '10' }),
        ],
      }),
      0,
      lookups,
      [
        contender('lsu', 'run.tar.gz', true),
        contender('tulane', 'run_1.tar.gz', false),
        contender('uno', 'run_2.tar.gz', false),
      ],
    );
    expect(view.story).toBe(
      'three files named run.tar.gz were created at once (at lsu, tulane and uno): the one from lsu keeps the name, the others were renamed run_1.tar.gz and run_2.tar.gz',
    );
  });

  it('names the user and group of a membership instead of their ids', () => {
    const view = conflictView(
      record({
        tbl: 'memberships',
        path: null,
        versions: [
          file('lsu', { id: '50', user_id: '2', group_id: '30', role: 'member' }),
          file('uno', { id: '50', user_id: '2', group_id: '30', role: 'manager' }),
        ],
      }),
      1,
      lookups,
      [],
    );
    expect(view.entry.label).toBe('membership of alice in lab');
    expect(view.story).toBe('role set to member at lsu while role set to manager at uno');
  });
});
