import { describe, expect, it } from 'vitest';
import type { ReplicationPeerDto } from '@tributary/shared';
import { addSample, historyOf } from './lagHistory';

function peer(name: string, lagSeconds: number, changes = 0): ReplicationPeerDto {
  return {
    peer: name,
    backlog: { txs: 0, changes },
    incoming: { txs: 0, changes: 0 },
    appliedSeq: 0,
    lastSuccessAt: null,
    lastAttemptAt: null,
    lagSeconds,
    lastError: null,
    lastErrorAt: null,
    waitingOn: null,
  };
}

describe('addSample', () => {
  it('appends per peer, drops old samples and peers that left', () => {
    let h = addSample({}, { peers: [peer('a', 1), peer('b', 2)] }, 1000);
    h = addSample(h, { peers: [peer('a', 3, 5)] }, 2000);
    expect(h).toEqual({
      a: [
        { at: 1000, lagSeconds: 1, backlog: 0 },
        { at: 2000, lagSeconds: 3, backlog: 5 },
      ],
    });
    h = addSample(h, { peers: [peer('a', 0)] }, 10_000, 5000);
    expect(h.a?.map((s) => s.at)).toEqual([10_000]);
  });

  it('caps the number of samples', () => {
    let h = {};
    for (let i = 1; i <= 10; i++) h = addSample(h, { peers: [peer('a', i)] }, i * 1000, 60_000, 4);
    expect((h as Record<string, unknown[]>).a).toHaveLength(4);
  });
});

describe('historyOf', () => {
  it("takes the site's samples and ends with the current reading", () => {
    const h = historyOf(
      {
        peers: [
          {
            peer: 'a',
            samples: [
              { at: '2026-11-21T10:00:00.000Z', lagSeconds: 4, backlogChanges: 9 },
              { at: '2026-11-21T10:00:30.000Z', lagSeconds: 0, backlogChanges: 0 },
            ],
          },
        ],
      },
      { peers: [peer('a', 2, 3)] },
      Date.parse('2026-11-21T10:00:40.000Z'),
    );
    expect(h.a).toEqual([
      { at: Date.parse('2026-11-21T10:00:00.000Z'), lagSeconds: 4, backlog: 9 },
      { at: Date.parse('2026-11-21T10:00:30.000Z'), lagSeconds: 0, backlog: 0 },
      { at: Date.parse('2026-11-21T10:00:40.000Z'), lagSeconds: 2, backlog: 3 },
    ]);
  });
});
