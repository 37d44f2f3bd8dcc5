import { Injectable } from '@nestjs/common';
import type { StorageResourceListDto } from '@tributary/shared';
import { AccessService } from '../access/access.service';
import type { Principal } from '../common/principal';
import { SiteContext } from '../sites/site-context';
import { StorageResourcesRepository } from './storage-resources.repository';
import { StorageService } from './storage.service';

/** This site's storage resources for administrators: where, which is the default, health, use. */
@Injectable()
export class StorageResourcesService {
  constructor(
    private readonly access: AccessService,
    private readonly repo: StorageResourcesRepository,
    private readonly storage: StorageService,
    private readonly site: SiteContext,
  ) {}

  async list(principal: Principal): Promise<StorageResourceListDto> {
    this.access.assertAdmin(principal);
    const live = new Map(this.storage.statuses().map((s) => [s.name, s]));
    const rows = await this.repo.list(this.site.siteId);
    return {
      site: this.site.siteId,
      items: rows.map((r) => {
        const now = live.get(r.name);
        const settings: Record<string, string | number | boolean> = {};
        for (const [k, v] of Object.entries(r.settings))
          if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') settings[k] = v;
        return {
          id: r.id.toString(),
          name: r.name,
          kind: r.kind === 's3' || r.kind === 'compound' ? r.kind : 'local',
          location: r.rootPath,
          settings,
          default: r.isDefault,
          configured: now !== undefined,
          // The service's view is the freshest; a resource no longer configured keeps its last row.
          status: now?.status ?? (r.health === 'failing' ? 'failing' : 'ok'),
          error: now ? (now.error ?? null) : r.healthError,
          checkedAt: (now?.checkedAt ?? r.healthCheckedAt)?.toISOString() ?? null,
          objects: r.objects,
          bytes: r.bytes,
        };
      }),
    };
  }
}
