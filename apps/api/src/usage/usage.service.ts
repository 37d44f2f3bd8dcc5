import { Injectable } from '@nestjs/common';
import { ErrorCode, type UsageDto } from '@tributary/shared';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { UsageRepository } from './usage.repository';

/**
 * Storage used below a collection (docs/usage.md). The sums take in everything below it,
 * so they are answered only to a caller who may read all of it (an administrator, the owner, or a
 * recursive grant on it or above): a caller who sees part of a subtree learns nothing from them
 * that a listing would not show.
 */
@Injectable()
export class UsageService {
  constructor(
    private readonly access: AccessService,
    private readonly namespace: NamespaceService,
    private readonly repo: UsageRepository,
  ) {}

  async usage(principal: Principal, path: string, children: number): Promise<UsageDto> {
    const found = await this.namespace.resolve(path);
    await this.access.requireAt(principal, path, found && entryTarget(found), 'read', () =>
      notFound(`collection ${path}`),
    );
    if (found!.kind !== 'collection') {
      throw new DomainError(ErrorCode.NotACollection, `${path} is a data object; usage is for collections`);
    }
    if (!levelAtLeast(await this.access.inheritedBelow(principal, path), 'read')) {
      throw new DomainError(
        ErrorCode.PermissionDenied,
        `usage adds up everything below ${path}, so it needs read access to all of it (ownership or a recursive grant on ${path} or above); ask for a collection you may read whole`,
      );
    }
    const { more, ...sums } = await this.repo.usage(path, children);
    return { path, ...sums, childrenTruncated: more };
  }
}
