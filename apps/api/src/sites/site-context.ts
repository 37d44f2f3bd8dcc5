import { Injectable } from '@nestjs/common';

/**
 * Facts about this site that the bootstrap establishes once at start-up and that services read:
 * the site id, its local storage resource, and well-known catalog rows.
 */
@Injectable()
export class SiteContext {
  siteId = '';
  /** The default storage resource's id (where new bytes go). */
  resourceId = 0n;
  /** Every configured storage resource of this site: name → id (docs/storage.md). */
  resources = new Map<string, bigint>();
  rootCollectionId = 0n;
  /** The built-in group every account belongs to implicitly (iRODS's `public`). */
  publicGroupId = 0n;
}

export const PUBLIC_GROUP = 'public';
export const HOME_ROOT = '/home';
export const PROJECTS_ROOT = '/projects';
