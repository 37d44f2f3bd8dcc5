import type { EngineStatus } from '@tributary/replication';
import { describe, expect, it } from 'vitest';
import type { AccessService } from '../access/access.service';
import type { Principal } from '../common/principal';
import { ReplicationAdminService } from './replication-admin.service';
import type { ReplicationRepository } from './replication.repository';
import type { ReplicationService } from './replication.service';

type PeerStatus = EngineStatus['peers'][number];

function serviceWith(peers: PeerStatus[]): ReplicationAdminService {
  const status: EngineStatus = {
    site: 'lsu',
    running: true,
    cycleSeconds: 30,
    lastSeq: 0,
    pendingCapture: 0,
    conflicts: 0,
    peers,
    cycles: [],
  };
  const replication = {
    afterCycle: () => undefined,
    engine: { status: () => Promise.resolve(status) },
  } as unknown as ReplicationService;
  const access = { assertAdmin: () => undefined } as unknown as AccessService;
  return new ReplicationAdminService(replication, {} as ReplicationRepository, access);
}

function peer(over: Partial<PeerStatus>): PeerStatus {
  return {
    peer: 'uno',
    backlog: { txs: 0, changes: 0 },
    incoming: { txs: 0, changes: 0 },
    appliedSeq: 0,
    lastSuccessAt: null,
    lastAttemptAt: null,
    lagSeconds: 0,
    lastError: null,
    lastErrorAt: null,
    waitingOn: null,
    ...over,
  };
}

describe('replication status', () => {
  const admin = { userId: 1n, username: 'admin' } as unknown as Principal;

  it('shows no error time once the error is over (a later exchange succeeded)', async () => {
    const failedAt = new Date('2026-01-01T10:00:00Z');
    const status = await serviceWith([
      peer({ lastError: null, lastErrorAt: failedAt, lastSuccessAt: new Date('2026-01-01T10:00:30Z') }),
    ]).status(admin);
    expect(status.peers[0]).toMatchObject({ lastError: null, lastErrorAt: null });
  });

  it('shows the error and its time while the peer fails', async () => {
    const failedAt = new Date('2026-01-01T10:00:00Z');
    const status = await serviceWith([
      peer({ lastError: 'connect ECONNREFUSED 127.0.0.1:8082', lastErrorAt: failedAt }),
    ]).status(admin);
    expect(status.peers[0]).toMatchObject({
      lastError: 'connect ECONNREFUSED 127.0.0.1:8082',
      lastErrorAt: failedAt.toISOString(),
    });
  });
});
