import { Injectable } from '@nestjs/common';
import type { CopyState } from '@tributary/shared';
import { inTransaction } from '@tributary/replication';
import { SqlPool } from '../database/sql-pool';

/** One of this site's copies, as the scrub checks it. */
export interface ScrubCopy {
  id: string;
  objectId: string;
  /** The storage key of its file. */
  key: string;
  size: number;
  checksum: string;
  /** The state the copy had when read: the finding is recorded only if it still has it. */
  state: CopyState;
  /** As read (the pass's cursor); null: never verified. */
  verifiedAt: Date | null;
}

interface CopyRow {
  id: string;
  object_id: string;
  physical_path: string;
  size: string;
  checksum: string;
  status: CopyState;
  verified_at: Date | null;
}

const toCopy = (r: CopyRow): ScrubCopy => ({
  id: r.id,
  objectId: r.object_id,
  key: r.physical_path,
  size: Number(r.size),
  checksum: r.checksum,
  state: r.status,
  verifiedAt: r.verified_at,
});

const COPY_COLUMNS = `r.id::text, r.object_id::text, r.physical_path, r.size::text, r.checksum, r.status, r.verified_at`;

/**
 * The scrub's reads and writes of `replicas` at this site (plain SQL: a pass reads every copy). A
 * finding is written only while the row still describes the bytes that were hashed (same file,
 * same checksum, same state), checked under the row's lock: an update or the mover replacing the
 * file meanwhile is not damage.
 */
@Injectable()
export class ScrubRepository {
  constructor(private readonly sql: SqlPool) {}

  /**
   * This site's good copies in scrub order (never verified first, then oldest verified, then id)
   * after the cursor, leaving out those verified since `verifiedBefore` (the pass start or earlier).
   */
  async nextGood(
    siteId: string,
    after: { verifiedAt: Date | null; id: string } | null,
    limit: number,
    verifiedBefore: Date,
  ): Promise<ScrubCopy[]> {
    const rows = await this.sql.query<CopyRow>(
      `SELECT ${COPY_COLUMNS}
         FROM replicas r
        WHERE r.site_id = $1 AND r.status = 'good'
          AND (r.verified_at IS NULL OR r.verified_at < $2)
          AND (COALESCE(r.verified_at, '-infinity'::timestamptz), r.id) > (COALESCE($3::timestamptz, '-infinity'::timestamptz), $4::bigint)
        ORDER BY COALESCE(r.verified_at, '-infinity'::timestamptz), r.id
        LIMIT $5`,
      [siteId, verifiedBefore, after?.verifiedAt ?? null, after?.id ?? '-1', limit],
    );
    return rows.rows.map(toCopy);
  }

  /** This site's copy of an object (any state), or null. */
  async localCopy(siteId: string, objectId: bigint): Promise<ScrubCopy | null> {
    const rows = await this.sql.query<CopyRow>(
      `SELECT ${COPY_COLUMNS} FROM replicas r WHERE r.object_id = $1 AND r.site_id = $2 ORDER BY r.id LIMIT 1`,
      [objectId.toString(), siteId],
    );
    return rows.rows[0] ? toCopy(rows.rows[0]) : null;
  }

  /**
   * Records that these copies' bytes were found equal to their checksum now (and clears their
   * error); a suspect copy whose checksum is its object's becomes good again. One statement for
   * many copies (one replicated transaction instead of one per copy). Resolves with the ids written.
   */
  async markVerified(copies: readonly ScrubCopy[]): Promise<Set<string>> {
    if (copies.length === 0) return new Set();
    const rows = await this.sql.query<{ id: string }>(
      `UPDATE replicas r
          SET verified_at = now(), error = NULL,
              status = 'good',
              updated_at = CASE WHEN r.status = 'good' THEN r.updated_at ELSE now() END
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS v(id, key, checksum, state),
              data_objects o
        WHERE r.id = v.id AND o.id = r.object_id
          AND r.physical_path = v.key AND r.checksum = v.checksum AND r.status::text = v.state
          AND (r.status = 'good' OR (r.status = 'suspect' AND r.checksum = o.checksum))
        RETURNING r.id::text`,
      [
        copies.map((c) => c.id),
        copies.map((c) => c.key),
        copies.map((c) => c.checksum),
        copies.map((c) => c.state),
      ],
    );
    return new Set(rows.rows.map((r) => r.id));
  }

  /**
   * Marks a copy suspect with `error`, under its row's lock, if the row still describes the bytes
   * that were hashed and `stillBad()` (run while the lock is held: the file is still missing, say)
   * agrees. Resolves with whether it was marked.
   */
  async markSuspect(copy: ScrubCopy, error: string, stillBad: () => Promise<boolean>): Promise<boolean> {
    return inTransaction(this.sql.pool, async (client) => {
      const locked = await client.query<{ physical_path: string; checksum: string; status: CopyState }>(
        `SELECT physical_path, checksum, status FROM replicas WHERE id = $1 FOR UPDATE`,
        [copy.id],
      );
      const row = locked.rows[0];
      if (
        !row ||
        row.physical_path !== copy.key ||
        row.checksum !== copy.checksum ||
        row.status !== copy.state
      )
        return false;
      if (!(await stillBad())) return false;
      await client.query(
        `UPDATE replicas SET status = 'suspect', error = $2, updated_at = now() WHERE id = $1`,
        [copy.id, error],
      );
      return true;
    });
  }
}
