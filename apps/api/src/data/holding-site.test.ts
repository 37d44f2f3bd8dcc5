import { describe, expect, it } from 'vitest';
import type { ObjectRecord, ReplicaRecord } from '../namespace/namespace.repository';
import { baseAcceptable, holdingSite, servableCopies } from './holding-site';

const replica = (siteId: string, status: ReplicaRecord['status'], checksum = 'a'): ReplicaRecord => ({
  siteId,
  resourceId: 1n,
  resource: 'default',
  physicalPath: '1.v1',
  size: 3n,
  checksum,
  status,
});

const object = (version: number, checksum: string, replicas: ReplicaRecord[]): ObjectRecord => ({
  kind: 'object',
  id: 1n,
  collectionId: 1n,
  name: 'f',
  path: '/f',
  ownerId: 1n,
  owner: 'ann',
  group: null,
  size: 3n,
  checksum,
  contentType: 'application/octet-stream',
  version,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  mtimeNs: 0n,
  mode: 0o644,
  linkTarget: null,
  replicaCount: replicas.length,
  site: null,
  replicas,
});

describe('holdingSite', () => {
  it('passes over cached copies while another copy is good', () => {
    const cached = { ...replica('alpha', 'good'), cached: true };
    expect(holdingSite(object(1, 'a', [cached, replica('lsu', 'good')]), 'uno')).toBe('lsu');
    expect(holdingSite(object(1, 'a', [cached, replica('lsu', 'stale')]), 'uno')).toBe('alpha');
  });

  it('is the first site by id with a good copy, whatever order the replicas come in', () => {
    const o = object(1, 'a', [replica('uno', 'good'), replica('lsu', 'stale'), replica('tulane', 'good')]);
    expect(holdingSite(o, 'lsu')).toBe('tulane');
  });

  it('is this site when no site has a good copy', () => {
    expect(holdingSite(object(1, 'a', [replica('uno', 'stale')]), 'lsu')).toBe('lsu');
    expect(holdingSite(object(1, 'a', []), 'lsu')).toBe('lsu');
  });

  it('never a site whose row says good for older bytes', () => {
    const o = object(2, 'b', [replica('lsu', 'good', 'a'), replica('uno', 'good', 'b')]);
    expect(holdingSite(o, 'tulane')).toBe('uno');
    expect(holdingSite(object(2, 'b', [replica('lsu', 'good', 'a')]), 'tulane')).toBe('tulane');
  });

  it('is never a copy that is not good yet or any more', () => {
    for (const status of ['pending', 'copying', 'stale', 'suspect', 'failed'] as const) {
      const o = object(1, 'a', [replica('lsu', status), replica('uno', 'good')]);
      expect(holdingSite(o, 'tulane')).toBe('uno');
    }
  });
});

describe('servableCopies', () => {
  it("only good copies whose checksum is the object's", () => {
    const o = object(3, 'c', [
      replica('lsu', 'good', 'c'),
      replica('tulane', 'good', 'b'),
      replica('uno', 'stale', 'c'),
      replica('unm', 'pending', 'c'),
    ]);
    expect(servableCopies(o).map((r) => r.siteId)).toEqual(['lsu']);
  });
});

describe('baseAcceptable', () => {
  const at3 = object(3, 'c3', []);

  it("where the bytes are held: only the object's version and SHA-256 exactly", () => {
    expect(baseAcceptable(at3, { version: 3, sha256: 'c3' }, true)).toBe(true);
    expect(baseAcceptable(at3, { version: 3, sha256: 'other' }, true)).toBe(false);
    expect(baseAcceptable(at3, { version: 4, sha256: 'c4' }, true)).toBe(false);
    expect(baseAcceptable(at3, { version: 2, sha256: 'c2' }, true)).toBe(false);
  });

  it('elsewhere: also a newer base (this catalog may lag), never an older one', () => {
    expect(baseAcceptable(at3, { version: 3, sha256: 'c3' }, false)).toBe(true);
    expect(baseAcceptable(at3, { version: 3, sha256: 'other' }, false)).toBe(false);
    expect(baseAcceptable(at3, { version: 4, sha256: 'c4' }, false)).toBe(true);
    expect(baseAcceptable(at3, { version: 2, sha256: 'c2' }, false)).toBe(false);
  });
});
