import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, type VerifyReportDto } from '@tributary/shared';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { isASymlink } from '../data/data.errors';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { MoverService } from '../mover/mover.service';
import { ScrubRepository } from './scrub.repository';
import { ScrubService } from './scrub.service';

/**
 * `POST /placement/verify`: this site's copy of one object checked now (re-hashed, unpaced) and
 * recorded as a pass would, then every copy's state.
 */
@Injectable()
export class VerifyService {
  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly scrub: ScrubService,
    private readonly repo: ScrubRepository,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
    private readonly mover: MoverService,
  ) {}

  async verify(principal: Principal, path: string): Promise<VerifyReportDto> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.namespace.resolve(path);
    // Nothing there and nothing readable there get the same 404: names cannot be probed.
    if (!entry || !levelAtLeast(await this.access.levelOf(principal, entryTarget(entry)), 'read'))
      throw noObject(path);
    if (entry.kind === 'collection') {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        `${path} is a collection; verify checks the copies of one object`,
        { path: ['is a collection, not an object'] },
      );
    }
    if (entry.linkTarget !== null) throw isASymlink(entry.path, entry.linkTarget);
    const copy = await this.repo.localCopy(this.config.siteId, entry.id);
    // Only a whole copy has bytes to check: a good one, or a suspect one (found good again, it is
    // served again). Pending, copying, failed or stale copies are the mover's business.
    const local =
      copy && (copy.state === 'good' || copy.state === 'suspect')
        ? (await this.scrub.checkNow(copy)).kind
        : 'none';
    // Every copy's state as GET /placement/copies reports it (wanted by a rule or not), after the finding.
    const { copies } = await this.mover.copies(principal, entry.path);
    return { path: entry.path, local, copies };
  }
}

export function noObject(path: string): DomainError {
  return new DomainError(ErrorCode.NotFound, `${path}: no such object, or you may not read it`);
}
