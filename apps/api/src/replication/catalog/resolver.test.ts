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
});
