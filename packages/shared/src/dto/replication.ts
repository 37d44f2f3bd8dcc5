/** One peer as this site sees it (GET /api/v1/replication/status). */
export interface ReplicationPeerDto {
  peer: string;
  /** Transactions and changes queued for the peer, not yet acknowledged by it. */
  backlog: { txs: number; changes: number };
  /** Transactions and changes received from the peer, not yet applied here. */
  incoming: { txs: number; changes: number };
  appliedSeq: number;
  lastSuccessAt: string | null;
  lastAttemptAt: string | null;
  /** Age in seconds of the oldest change waiting for the peer (0: it has everything). */
  lagSeconds: number;
  lastError: string | null;
  lastErrorAt: string | null;
  /** Why the peer's next transaction is not applied here yet, if it waits. */
  waitingOn: string | null;
}

export interface ReplicationCycleDto {
  startedAt: string;
  durationMs: number;
  injected: { txs: number; changes: number; conflicts: number };
  extracted: { txs: number; changes: number };
  dispatched: Array<{ peer: string; ok: boolean; txs: number; changes: number; error?: string }>;
  waiting: Record<string, string>;
  error?: string;
}

export interface ReplicationStatusDto {
  site: string;
  running: boolean;
  cycleSeconds: number;
  /** Highest seq of this site's own transactions extracted so far. */
  lastSeq: number;
  /** Local changes captured but not yet extracted. */
  pendingCapture: number;
  conflicts: number;
  peers: ReplicationPeerDto[];
  /** The most recent cycles, newest first. */
  cycles: ReplicationCycleDto[];
}

/** Lag per peer over time (GET /api/v1/replication/lag): one sample per peer after each cycle. */
export interface ReplicationLagDto {
  site: string;
  /** The samples cover this many hours back at most (kept for a day). */
  hours: number;
  peers: Array<{
    peer: string;
    samples: Array<{ at: string; lagSeconds: number; backlogChanges: number }>;
  }>;
}

export interface CatalogDigestDto {
  site: string;
  digest: string;
  rows: number;
  tables: Record<string, { rows: number; digest: string }>;
}

export interface ReplicationConflictDto {
  id: string;
  kind: string;
  table: string;
  rowKey: string;
  winner: 'incoming' | 'held';
  resolution: string;
  held: { site: string | null; stamp: string | null; row: Record<string, unknown> | null };
  incoming: { site: string; stamp: string; row: Record<string, unknown> | null };
  detectedAt: string;
}
