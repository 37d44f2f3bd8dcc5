import type {
  ConflictDecisionRequest,
  ConflictDto,
  ConflictListQuery,
  ConflictSummaryDto,
  EntryDto,
  Page,
  TributaryClient,
} from '@tributary/shared';
import { createTributaryClient } from '@tributary/shared';
import { ApiConnection } from '@tributary/buffer';
import type { ActiveSite } from '../config/config';

/**
 * The small typed service layer the commands use: the shared typed client for the catalog, the
 * buffer package's connection for transfers, and the few calls the client does not carry yet
 * (conflicts). One instance per command run, so every request shares fetch's keep-alive pool.
 */
export class SiteService {
  readonly client: TributaryClient;
  readonly api: ApiConnection;

  constructor(
    readonly site: ActiveSite,
    token: string,
  ) {
    const { client, api } = connect(site.url, token);
    this.client = client;
    this.api = api;
  }

  /** Every child of a collection (all pages). */
  async children(path: string, signal?: AbortSignal): Promise<EntryDto[]> {
    const items: EntryDto[] = [];
    let cursor: string | undefined;
    do {
      const page: Page<EntryDto> = await this.client.listChildren({ path, limit: 1000, cursor }, signal);
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    return items;
  }

  /**
   * Walks a collection breadth-first, yielding each entry below it with its path relative to
   * `root`; `concurrency` listings run at once.
   */
  async walk(
    root: string,
    signal?: AbortSignal,
    concurrency = 8,
  ): Promise<Array<EntryDto & { relative: string }>> {
    const result: Array<EntryDto & { relative: string }> = [];
    let level: string[] = [root];
    while (level.length > 0) {
      const next: string[] = [];
      await parallel(level, concurrency, async (collection) => {
        for (const child of await this.children(collection, signal)) {
          const relative = root === '/' ? child.path.slice(1) : child.path.slice(root.length + 1);
          result.push({ ...child, relative });
          if (child.kind === 'collection') next.push(child.path);
        }
      });
      level = next;
    }
    return result;
  }

  listConflicts(query: ConflictListQuery): Promise<Page<ConflictDto>> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query) as Array<[string, string | number | undefined]>) {
      if (value !== undefined) params.set(key, String(value));
    }
    return this.api.json<Page<ConflictDto>>({ method: 'GET', url: `/api/v1/conflicts?${params.toString()}` });
  }

  conflict(id: string): Promise<ConflictDto> {
    return this.api.json<ConflictDto>({ method: 'GET', url: `/api/v1/conflicts/${encodeURIComponent(id)}` });
  }

  conflictSummary(): Promise<ConflictSummaryDto> {
    return this.api.json<ConflictSummaryDto>({ method: 'GET', url: '/api/v1/conflicts/summary' });
  }

  decideConflict(id: string, decision: ConflictDecisionRequest): Promise<ConflictDto> {
    return this.api.json<ConflictDto>({
      method: 'POST',
      url: `/api/v1/conflicts/${encodeURIComponent(id)}/decision`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(decision),
    });
  }
}

/** Runs `work` over `items` with at most `limit` at once; the first failure stops new work and is thrown. */
export async function parallel<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        await work(items[index]!, index);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/** A typed client and a transfer connection for one site and token (fetch's keep-alive pool underneath). */
export function connect(url: string, token: string): { client: TributaryClient; api: ApiConnection } {
  return {
    client: createTributaryClient({ baseUrl: url, token }),
    api: new ApiConnection({ baseUrl: url, token }),
  };
}
