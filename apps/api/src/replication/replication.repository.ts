import { Injectable } from '@nestjs/common';
import type { ReplicationConflictDto } from '@tributary/shared';
import { redactSecrets } from '../common/serialize';
import { SqlPool } from '../database/sql-pool';

/** How long lag samples are kept. */
export const LAG_RETENTION_HOURS = 24;

/** The replication tables the API reads and writes itself (the engine owns the rest). */
@Injectable()
export class ReplicationRepository {
  constructor(private readonly sql: SqlPool) {}

  /** Whether this catalog has registered its own site (false on a new, empty one). */
  async hasLocalSite(): Promise<boolean> {
    const registered = await this.sql.query('SELECT 1 FROM sites WHERE is_local');
    return (registered.rowCount ?? 0) > 0;
  }

  /** Remembers a peer request's nonce; false when it was seen before (a replay). */
  async rememberNonce(nonce: string): Promise<boolean> {
    const res = await this.sql.query(
      'INSERT INTO repl_nonces (nonce) VALUES ($1) ON CONFLICT (nonce) DO NOTHING',
      [nonce],
    );
    return res.rowCount === 1;
  }

  /** Records one lag sample per peer and forgets those older than a day. */
  async recordLag(
    at: Date,
    peers: ReadonlyArray<{ peer: string; lagSeconds: number; backlogChanges: number }>,
  ) {
    if (peers.length === 0) return;
    await this.sql.query(
      `INSERT INTO repl_lag_samples (peer_id, at, lag_seconds, backlog_changes)
       SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::float8[], $4::int[])
       ON CONFLICT (peer_id, at) DO NOTHING`,
      [
        peers.map((p) => p.peer),
        peers.map(() => at.toISOString()),
        peers.map((p) => p.lagSeconds),
        peers.map((p) => p.backlogChanges),
      ],
    );
    await this.sql.query(`DELETE FROM repl_lag_samples WHERE at < $1`, [
      new Date(at.getTime() - LAG_RETENTION_HOURS * 3600_000).toISOString(),
    ]);
  }

  /** Lag samples since `since`, per peer, oldest first (at most `perPeer` each: the latest). */
  async lagSince(
    since: Date,
    perPeer: number,
  ): Promise<Array<{ peer: string; at: Date; lagSeconds: number; backlogChanges: number }>> {
    const res = await this.sql.query<{
      peer_id: string;
      at: Date;
      lag_seconds: number;
      backlog_changes: number;
    }>(
      `SELECT peer_id, at, lag_seconds, backlog_changes FROM (
         SELECT s.*, row_number() OVER (PARTITION BY peer_id ORDER BY at DESC) AS n
           FROM repl_lag_samples s WHERE at >= $1) x
        WHERE n <= $2 ORDER BY peer_id, at`,
      [since.toISOString(), perPeer],
    );
    return res.rows.map((r) => ({
      peer: r.peer_id,
      at: r.at,
      lagSeconds: r.lag_seconds,
      backlogChanges: r.backlog_changes,
    }));
  }

  async conflicts(limit: number, before?: Date): Promise<ReplicationConflictDto[]> {
    const res = await this.sql.query<{
      id: string;
      kind: string;
      tbl: string;
      row_key: string;
      winner: 'incoming' | 'held';
      resolution: string;
      local_site: string | null;
      local_stamp: string | null;
      local_data: Record<string, unknown> | null;
      incoming_site: string;
      incoming_stamp: string;
      incoming_data: Record<string, unknown> | null;
      detected_at: Date;
    }>(
      `SELECT * FROM repl_conflicts WHERE $2::timestamptz IS NULL OR detected_at < $2
        ORDER BY detected_at DESC, id LIMIT $1`,
      [limit, before ?? null],
    );
    return res.rows.map((r) => ({
      id: r.id,
      kind: r.kind,
      table: r.tbl,
      rowKey: r.row_key,
      winner: r.winner,
      resolution: r.resolution,
      held: { site: r.local_site, stamp: r.local_stamp, row: redactSecrets(r.local_data) },
      incoming: { site: r.incoming_site, stamp: r.incoming_stamp, row: redactSecrets(r.incoming_data) },
      detectedAt: r.detected_at.toISOString(),
    }));
  }
}
