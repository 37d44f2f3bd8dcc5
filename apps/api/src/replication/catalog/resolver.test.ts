import type { DetectedConflict } from '@tributary/replication';
import { describe, expect, it } from 'vitest';
import { CatalogResolver } from './resolver';

describe('CatalogResolver', () => {
  const resolver = new CatalogResolver();
  function conflict(
    incoming: Record<string, unknown>,
    held: Record<string, unknown>,
    stamp: number,
  ): DetectedConflict {
    return {
      kind: 'update',
      table: 'data_objects',
      key: '42',
      incoming: {
        site: 'uno',
        change: { t: 'data_objects', o: 'U', k: '42', d: incoming, s: stamp, b: 1, bs: 'lsu' },
      },
      held: { stamp: 5, site: 'lsu', deleted: false, row: held },
    };
  }

  it('an incoming update wins over a held move to the trash, whatever the stamps', () => {
    expect(resolver.resolve(conflict({ trash_id: 0 }, { trash_id: 3 }, 1)).winner).toBe('incoming');
  });

  it('a held update wins over an incoming move to the trash', () => {
    expect(resolver.resolve(conflict({ trash_id: 3 }, { trash_id: 0 }, 99)).winner).toBe('held');
  });

  it('otherwise the latest wins', () => {
    expect(resolver.resolve(conflict({ trash_id: 0 }, { trash_id: 0 }, 99)).winner).toBe('incoming');
    expect(resolver.resolve(conflict({ trash_id: 0 }, { trash_id: 0 }, 1)).winner).toBe('held');
  });

  it("a copy row's removal wins over an update of it, whichever is later and wherever it is held", () => {
    const row = { id: '7', object_id: '42', site_id: 'tulane', status: 'stale' };
    const incomingUpdate: DetectedConflict = {
      kind: 'update-deleted',
      table: 'replicas',
      key: '7',
      incoming: { site: 'lsu', change: { t: 'replicas', o: 'U', k: '7', d: row, s: 99, b: 1, bs: 'tulane' } },
      held: { stamp: 5, site: 'tulane', deleted: true, row: null },
    };
    expect(resolver.resolve(incomingUpdate).winner).toBe('held');
    const incomingDelete: DetectedConflict = {
      kind: 'delete-updated',
      table: 'replicas',
      key: '7',
      incoming: {
        site: 'tulane',
        change: { t: 'replicas', o: 'D', k: '7', d: row, s: 5, b: 1, bs: 'tulane' },
      },
      held: { stamp: 99, site: 'lsu', deleted: false, row },
    };
    expect(resolver.resolve(incomingDelete).winner).toBe('incoming');
  });

  it("a copy row changed by its own site wins over another site's stale mark, whichever is later", () => {
    const moved = { id: '7', object_id: '42', site_id: 'tulane', resource_id: '9', status: 'good' };
    const staleMark = { id: '7', object_id: '42', site_id: 'tulane', resource_id: '3', status: 'stale' };
    const atTulane: DetectedConflict = {
      kind: 'update',
      table: 'replicas',
      key: '7',
      incoming: {
        site: 'lsu',
        change: { t: 'replicas', o: 'U', k: '7', d: staleMark, s: 99, b: 1, bs: 'tulane' },
      },
      held: { stamp: 5, site: 'tulane', deleted: false, row: moved },
    };
    expect(resolver.resolve(atTulane).winner).toBe('held');
    const atLsu: DetectedConflict = {
      kind: 'update',
      table: 'replicas',
      key: '7',
      incoming: {
        site: 'tulane',
        change: { t: 'replicas', o: 'U', k: '7', d: moved, s: 5, b: 1, bs: 'tulane' },
      },
      held: { stamp: 99, site: 'lsu', deleted: false, row: staleMark },
    };
    expect(resolver.resolve(atLsu).winner).toBe('incoming');
    // Two other sites' updates: the latest, as for any row.
    const others: DetectedConflict = { ...atLsu, incoming: { ...atLsu.incoming, site: 'uno' } };
    expect(resolver.resolve(others).winner).toBe('held');
  });
});
