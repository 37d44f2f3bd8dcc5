import type { ReplicaDto } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { archiveOnly, tierLabel, tiersMoving } from './tiers';

const replica = (tier?: ReplicaDto['tier']): ReplicaDto => ({
  site: 'lsu',
  resource: 'tiered',
  size: 10,
  checksum: 'sha256:x',
  status: 'good',
  ...(tier ? { tier } : {}),
});

describe('tiers of copies on compound resources', () => {
  it('says where the bytes are, whether archived, and a staging’s progress', () => {
    expect(tierLabel(undefined)).toBe('');
    expect(tierLabel({ cache: true, archive: 'pending', archiveError: null, staging: null })).toBe(
      'in the cache, archiving',
    );
    expect(tierLabel({ cache: true, archive: 'pending', archiveError: 'down', staging: null })).toBe(
      'in the cache, archiving failed, retrying',
    );
    expect(
      tierLabel({
        cache: false,
        archive: 'archived',
        archiveError: null,
        staging: { bytesStaged: 25, bytesTotal: 100 },
      }),
    ).toBe('in the archive only, archived, staging 25%');
  });

  it('polls while archiving or staging, and knows an archive-only copy', () => {
    const settled = replica({ cache: false, archive: 'archived', archiveError: null, staging: null });
    expect(tiersMoving([replica(), settled])).toBe(false);
    expect(archiveOnly([replica(), settled])).toBe(true);
    expect(archiveOnly([replica()])).toBe(false);
    expect(
      tiersMoving([replica({ cache: true, archive: 'pending', archiveError: null, staging: null })]),
    ).toBe(true);
  });
});
