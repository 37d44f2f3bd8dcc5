import { Injectable } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';

/** A row of storage_resources, with what this site's copies hold there. */
export interface ResourceRow {
  id: bigint;
  name: string;
  kind: string;
  rootPath: string;
  settings: Record<string, unknown>;
  isDefault: boolean;
  health: string;
  healthError: string | null;
  healthCheckedAt: Date | null;
  objects: number;
  bytes: number;
}

/**
 * storage_resources (migration 20261129000000_storage_resources) as the storage service reads and
 * writes it at run time: where a key lives, the health found by the checks (local columns, never
 * replicated), and the listing for administrators. Plain SQL: `locate` runs on reads.
 * Registration at start-up is the site bootstrap's (SitesRepository.ensureResources).
 */
@Injectable()
export class StorageResourcesRepository {
  constructor(private readonly sql: SqlPool) {}

  /** The resource of this site whose copy row names `key`; null when no row does. */
  async locate(siteId: string, key: string): Promise<bigint | null> {
    const res = await this.sql.query<{ resource_id: string }>(
      'SELECT resource_id::text FROM replicas WHERE site_id = $1 AND physical_path = $2 LIMIT 1',
      [siteId, key],
    );
    const row = res.rows[0];
    return row ? BigInt(row.resource_id) : null;
  }

  /** Records a check's outcome (only the time when nothing changed). */
  async recordHealth(id: bigint, status: 'ok' | 'failing', error: string | null): Promise<void> {
    await this.sql.query(
      `UPDATE storage_resources SET health = $2, health_error = $3, health_checked_at = now() WHERE id = $1`,
      [id.toString(), status, error],
    );
  }

  /** This site's resources, the default first, with the copies each holds. */
  async list(siteId: string): Promise<ResourceRow[]> {
    const res = await this.sql.query<{
      id: string;
      name: string;
      driver: string;
      root_path: string;
      settings: Record<string, unknown>;
      is_default: boolean;
      health: string;
      health_error: string | null;
      health_checked_at: Date | null;
      objects: string;
      bytes: string;
    }>(
      `SELECT s.id::text, s.name, s.driver::text AS driver, s.root_path, s.settings, s.is_default, s.health,
              s.health_error, s.health_checked_at,
              COALESCE(c.objects, 0)::text AS objects, COALESCE(c.bytes, 0)::text AS bytes
         FROM storage_resources s
         LEFT JOIN (SELECT resource_id, count(*) AS objects, sum(size) AS bytes
                      FROM replicas WHERE site_id = $1 GROUP BY resource_id) c ON c.resource_id = s.id
        WHERE s.site_id = $1
        ORDER BY s.is_default DESC, s.name`,
      [siteId],
    );
    return res.rows.map((r) => ({
      id: BigInt(r.id),
      name: r.name,
      kind: r.driver,
      rootPath: r.root_path,
      settings: r.settings,
      isDefault: r.is_default,
      health: r.health,
      healthError: r.health_error,
      healthCheckedAt: r.health_checked_at,
      objects: Number(r.objects),
      bytes: Number(r.bytes),
    }));
  }
}
