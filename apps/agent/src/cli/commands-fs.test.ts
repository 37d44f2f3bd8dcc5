import type { ShardDto } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { erasureFields } from './commands-fs';

const shard = (index: number, site: string, more: Partial<ShardDto> = {}): ShardDto => ({
  index,
  site,
  state: 'good',
  current: true,
  size: 8,
  checksum: 'x',
  verifiedAt: null,
  error: null,
  wanted: true,
  ...more,
});

describe('trib stat of an erasure-coded object', () => {
  it('tells k+m, the chunk, how many shards are good, and each shard by index', () => {
    const fields = erasureFields({
      k: 4,
      m: 2,
      chunk: 1024 * 1024,
      domain: 'site',
      wantedSites: ['lsu', 'uno', 'tulane', 'a', 'b', 'c'],
      goodShards: 5,
      shards: [
        shard(2, 'tulane'),
        shard(0, 'lsu'),
        shard(1, 'uno', { state: 'suspect', current: false }),
        shard(1, 'x', { state: 'stale', current: false, wanted: false }),
      ],
    });
    expect(fields[0]![0]).toBe('erasure');
    expect(fields[0]![1]).toMatch(
      /^4\+2 \(4 data and 2 parity shards by site, 1\.0 MiB per shard per stripe; 5 of 6 good, any 4 read it\)$/,
    );
    expect(fields[1]).toEqual([
      'shards',
      '0:lsu (good), 1:uno (suspect, not current), 1:x (stale, not current, not wanted), 2:tulane (good)',
    ]);
  });
});
