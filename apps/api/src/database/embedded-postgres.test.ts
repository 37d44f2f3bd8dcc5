import { describe, expect, it } from 'vitest';
import { catalogSettings } from './embedded-postgres';

const GIB = 1024 ** 3;

describe('catalogSettings', () => {
  it('sizes shared buffers and the cache estimate to the machine, within bounds', () => {
    expect(catalogSettings(24 * GIB, '')).toMatchObject({
      shared_buffers: '6144MB',
      effective_cache_size: '12288MB',
      maintenance_work_mem: '768MB',
      max_wal_size: '8GB',
    });
    // Small machines keep PostgreSQL's own floor; large ones stop at 8 GB.
    expect(catalogSettings(256 * 1024 ** 2, '').shared_buffers).toBe('128MB');
    expect(catalogSettings(128 * GIB, '').shared_buffers).toBe('8192MB');
  });

  it('takes overrides and additions from TRIBUTARY_PG_SETTINGS, and refuses what is not name=value', () => {
    const s = catalogSettings(24 * GIB, ' shared_buffers=1GB  log_min_duration_statement=250 ');
    expect(s.shared_buffers).toBe('1GB');
    expect(s.log_min_duration_statement).toBe('250');
    expect(() => catalogSettings(24 * GIB, 'shared_buffers')).toThrow(
      /expected name=value, got "shared_buffers"/,
    );
    expect(() => catalogSettings(24 * GIB, '=1GB')).toThrow(/expected name=value/);
  });
});
