import { Injectable } from '@nestjs/common';
import type { ReplicationConflictDto } from '@tributary/shared';
import { redactSecrets } from '../common/serialize';
import { SqlPool } from '../database/sql-pool';

/** The replication tables the API reads directly (the engine owns the rest). */
@Injectable()
export class ReplicationRepository {
  constructor(private readonly sql: SqlPool) {}

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
