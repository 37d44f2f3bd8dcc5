import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { hashPassword } from '../auth/secrets';
import { idRangeFor, SITE_CONFIG, type SiteConfig } from '../config/config';
import { HOME_ROOT, PROJECTS_ROOT, PUBLIC_GROUP, SiteContext } from './site-context';
import { SitesRepository } from './sites.repository';
import { catalogEntryOf } from '../storage/resource-config';

export interface BootstrapResult {
  /** Set only when the first administrator was created now with a generated password. */
  generatedAdminPassword?: string;
  adminCreated: boolean;
}

/**
 * Makes a fresh catalog usable and fills SiteContext: registers this site with its id range
 * (fixed at registration), its storage resource, the namespace roots, the `public` group and
 * the first administrator. Idempotent: safe on every start.
 */
@Injectable()
export class SiteBootstrapService {
  private readonly logger = new Logger('Site');

  constructor(
    private readonly repo: SitesRepository,
    private readonly context: SiteContext,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  async bootstrap(): Promise<BootstrapResult> {
    const range = idRangeFor(this.config.siteIndex);
    const site = await this.repo.registerLocalSite(
      this.config.siteId,
      this.config.siteName,
      range,
      this.config.publicUrl,
    );
    if (site.idRangeStart !== range.start) {
      this.logger.warn(
        `site ${site.id} keeps the id range it was registered with (from ${site.idRangeStart}); SITE_INDEX is ignored`,
      );
    }
    await fs.mkdir(this.config.storageRoot, { recursive: true });
    this.context.siteId = site.id;
    const { resources, defaultResource } = this.config.storage;
    this.context.resources = await this.repo.ensureResources(
      site.id,
      resources.map(catalogEntryOf),
      defaultResource,
    );
    this.context.resourceId = this.context.resources.get(defaultResource)!;

    let generatedAdminPassword: string | undefined;
    const password =
      this.config.adminPassword ?? (generatedAdminPassword = randomBytes(12).toString('base64url'));
    const admin = await this.repo.ensureAdmin(this.config.adminUsername, () => hashPassword(password));
    const roots = await this.repo.ensureRoots(admin.id, [HOME_ROOT, PROJECTS_ROOT]);
    this.context.rootCollectionId = roots.rootId;
    this.context.publicGroupId = await this.repo.ensurePublicGroup(PUBLIC_GROUP, admin.id, [
      roots.rootId,
      ...roots.childIds,
    ]);
    if (admin.created)
      await this.repo.ensureHome(admin.id, this.config.adminUsername, roots.childIds[0] as bigint);
    return {
      adminCreated: admin.created,
      generatedAdminPassword: admin.created ? generatedAdminPassword : undefined,
    };
  }
}
