import { Injectable } from '@nestjs/common';
import {
  isCatalogId,
  MAX_SAVED_SEARCHES,
  type CreateSavedSearchSchema,
  type Page,
  type SavedSearchDto,
  type UpdateSavedSearchSchema,
} from '@tributary/shared';
import type { z } from 'zod';
import { AccessService } from '../access/access.service';
import type { Principal } from '../common/principal';
import { idString, iso } from '../common/serialize';
import { parseCondition } from '../metadata/query-condition';
import {
  invalidSavedSearchCursor,
  savedSearchNameTaken,
  savedSearchNotFound,
  tooManySavedSearches,
} from './saved-searches.errors';
import {
  SavedSearchesRepository,
  type SavedSearchKey,
  type SavedSearchRecord,
} from './saved-searches.repository';

const toDto = (s: SavedSearchRecord): SavedSearchDto => ({
  id: idString(s.id),
  name: s.name,
  query: s.query,
  scope: s.scope,
  kind: s.kind,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
});

/**
 * A user's saved searches. Everyone manages only their own: another user's id answers 404 like a
 * missing one. The query text must parse with the same parser metadata search uses, so a saved
 * search always runs.
 */
@Injectable()
export class SavedSearchesService {
  constructor(
    private readonly repo: SavedSearchesRepository,
    private readonly access: AccessService,
  ) {}

  async list(principal: Principal, limit: number, cursor: string | undefined): Promise<Page<SavedSearchDto>> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    const { items, total } = await this.repo.listForUser(principal.userId, limit, after);
    const last = items.at(-1);
    return {
      items: items.map(toDto),
      total,
      nextCursor: items.length === limit && last ? encodeCursor(last) : undefined,
    };
  }

  async create(
    principal: Principal,
    input: z.output<typeof CreateSavedSearchSchema>,
  ): Promise<SavedSearchDto> {
    this.check(principal, input);
    if ((await this.repo.countForUser(principal.userId)) >= MAX_SAVED_SEARCHES) throw tooManySavedSearches();
    if (await this.repo.nameTaken(principal.userId, input.name)) throw savedSearchNameTaken(input.name);
    return toDto(await this.repo.create({ userId: principal.userId, ...input }));
  }

  async update(
    principal: Principal,
    id: bigint,
    input: z.output<typeof UpdateSavedSearchSchema>,
  ): Promise<SavedSearchDto> {
    const existing = await this.repo.findOwn(principal.userId, id);
    if (!existing) throw savedSearchNotFound(id);
    this.check(principal, input);
    if (input.name !== undefined && (await this.repo.nameTaken(principal.userId, input.name, id))) {
      throw savedSearchNameTaken(input.name);
    }
    const updated = await this.repo.update(principal.userId, id, {
      ...(input.name === undefined ? {} : { name: input.name }),
      ...(input.query === undefined ? {} : { query: input.query }),
      ...(input.scope === undefined ? {} : { scope: input.scope }),
      ...(input.kind === undefined ? {} : { kind: input.kind }),
    });
    if (!updated) throw savedSearchNotFound(id);
    return toDto(updated);
  }

  async remove(principal: Principal, id: bigint): Promise<void> {
    if (!(await this.repo.delete(principal.userId, id))) throw savedSearchNotFound(id);
  }

  /** The query must parse (422 INVALID_QUERY pointing at the position); a confined token's scope stays inside. */
  private check(principal: Principal, input: { query?: string; scope?: string }): void {
    if (input.scope !== undefined) this.access.assertWithinToken(principal, input.scope);
    if (input.query !== undefined && input.query.trim() !== '') parseCondition({ q: input.query }, 'query');
  }
}

function encodeCursor(s: SavedSearchRecord): string {
  return Buffer.from(JSON.stringify({ n: s.name, id: idString(s.id) })).toString('base64url');
}

function decodeCursor(text: string): SavedSearchKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalidSavedSearchCursor();
  }
  if (typeof parsed === 'object' && parsed !== null && 'n' in parsed && 'id' in parsed) {
    const { n, id } = parsed;
    if (typeof n === 'string' && typeof id === 'string' && isCatalogId(id))
      return { name: n, id: BigInt(id) };
  }
  throw invalidSavedSearchCursor();
}
