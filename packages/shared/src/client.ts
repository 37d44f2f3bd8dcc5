import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './api-types';
import type { CreatedTokenDto, CreateTokenRequest, TokenDto } from './dto/tokens';
import type {
  CreateSavedSearchRequest,
  SavedSearchDto,
  UpdateSavedSearchRequest,
} from './dto/saved-searches';
import type {
  CreateGroupRequest,
  CreateUserRequest,
  GroupDto,
  SessionDto,
  UpdateUserRequest,
  UserDto,
} from './dto/accounts';
import type { Page } from './dto/common';
import type {
  CacheChangeDto,
  CacheListDto,
  CacheStatusDto,
  StageStatusDto,
  SubscriptionDto,
  SubscriptionListDto,
  SubscriptionRequest,
} from './dto/caching';
import type {
  EntryDetailDto,
  EntryDto,
  GrantRequest,
  ListChildrenQuery,
  PermissionDto,
  TrashEntryDto,
} from './dto/namespace';
import { CHUNK_SHA256_HEADER, MODE_HEADER, MTIME_HEADER } from './headers';
import type {
  AddTriplesRequest,
  BulkMetadataRequest,
  BulkMetadataResult,
  EntryTriplesDto,
  MetadataAttributesDto,
  MetadataQueryRequest,
  MetadataQueryResult,
  TripleDto,
  UpdateTripleRequest,
} from './dto/metadata';
import type {
  BulkConflictDecisionDto,
  BulkConflictDecisionRequest,
  ConflictDecisionRequest,
  ConflictDto,
  ConflictListQuery,
  ConflictPolicyDto,
  ConflictPolicyRequest,
  ConflictSummaryDto,
  ConflictKind,
} from './dto/conflicts';
import type {
  ErasureScrubDto,
  MoverStatusDto,
  ObjectCopiesDto,
  ObjectShardsDto,
  PlacementRuleDto,
  PlacementRuleRequest,
  PlacementSiteDto,
  VerifyReportDto,
} from './dto/placement';
import type { ReplicationCycleDto, ReplicationLagDto, ReplicationStatusDto } from './dto/replication';
import { ErrorCode, type ErrorBody } from './errors';
import type { CreateUploadRequest, UploadSessionDto } from './dto/uploads';
import type {
  ObjectStagingDto,
  StorageMoveDto,
  StorageMoveListDto,
  StorageResourceListDto,
} from './dto/storage';
import type { UsageDto } from './dto/usage';

/** A failed API call, carrying the stable error code the API answered with. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, string[]>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * An entry's POSIX attributes as a client gives them: `mtime` as ISO 8601 (up to nanoseconds) or
 * milliseconds since 1970, `mode` as permission bits (a number) or octal text.
 */
export interface EntryAttributes {
  mtime?: string | number;
  mode?: number | string;
}

export interface ClientOptions {
  /** The site's base URL, e.g. `http://127.0.0.1:8080`; empty for the same origin (the portal). */
  baseUrl: string;
  /** An API token (`trib_...`), sent as `Authorization: Bearer`. */
  token?: string;
  /** For portal sessions: the CSRF token to send on state-changing requests. */
  csrfToken?: () => string | undefined;
  fetch?: typeof fetch;
}

type Result = { data?: unknown; error?: unknown; response: Response };

/**
 * The typed client used by the portal, the agent and scripts. Request paths, parameters and bodies
 * are checked at compile time against `api-types.ts`, generated from the API's OpenAPI document
 * (`openapi.json`, which a test keeps equal to what the API serves).
 */
export function createTributaryClient(options: ClientOptions) {
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const headers = (unsafe: boolean): Record<string, string> => {
    const h: Record<string, string> = {};
    if (options.token) h.authorization = `Bearer ${options.token}`;
    const csrf = unsafe ? options.csrfToken?.() : undefined;
    if (csrf) h['x-csrf-token'] = csrf;
    return h;
  };
  const http: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl,
    fetch: fetchImpl,
    credentials: 'same-origin',
  });

  async function unwrap<T>(call: Promise<Result>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok) throw toApiError(response.status, error);
    return data as T;
  }

  const safe = { headers: headers(false) };
  const unsafe = (): { headers: Record<string, string> } => ({ headers: headers(true) });
  const dataUrl = (path: string, extra = ''): string =>
    `${options.baseUrl}/api/v1/data?path=${encodeURIComponent(path)}${extra}`;

  /** One request to `/api/v1/uploads`: JSON bodies as strings, chunks as bytes. */
  const sessionCall = async <T>(
    method: string,
    suffix: string,
    body?: string | Uint8Array<ArrayBuffer>,
    extra: Record<string, string> = {},
  ): Promise<T> => {
    const h: Record<string, string> = { ...headers(method !== 'GET'), ...extra };
    if (typeof body === 'string') h['content-type'] = 'application/json';
    else if (body) h['content-type'] = 'application/octet-stream';
    const res = await fetchImpl(`${options.baseUrl}/api/v1/uploads${suffix}`, { method, headers: h, body });
    if (res.status === 204) return undefined as T;
    const payload: unknown = await res.json().catch(() => undefined);
    if (!res.ok) throw toApiError(res.status, payload);
    return payload as T;
  };

  return {
    login: (username: string, password: string) =>
      unwrap<SessionDto>(http.POST('/api/v1/auth/login', { body: { username, password }, ...unsafe() })),
    logout: () => unwrap<void>(http.POST('/api/v1/auth/logout', unsafe())),
    session: (signal?: AbortSignal) =>
      unwrap<SessionDto>(http.GET('/api/v1/auth/session', { ...safe, signal })),
    me: () => unwrap<UserDto>(http.GET('/api/v1/me', safe)),
    changePassword: (currentPassword: string, newPassword: string) =>
      unwrap<void>(http.PUT('/api/v1/me/password', { body: { currentPassword, newPassword }, ...unsafe() })),
    switchGroup: (group: string) =>
      unwrap<UserDto>(http.PUT('/api/v1/me/active-group', { body: { group }, ...unsafe() })),

    listUsers: (limit?: number, cursor?: string) =>
      unwrap<Page<UserDto>>(http.GET('/api/v1/users', { params: { query: { limit, cursor } }, ...safe })),
    createUser: (body: CreateUserRequest) =>
      unwrap<UserDto>(http.POST('/api/v1/users', { body: { isAdmin: false, ...body }, ...unsafe() })),
    updateUser: (username: string, body: UpdateUserRequest) =>
      unwrap<UserDto>(
        http.PATCH('/api/v1/users/{username}', { params: { path: { username } }, body, ...unsafe() }),
      ),
    listGroups: () => unwrap<GroupDto[]>(http.GET('/api/v1/groups', safe)),
    createGroup: (body: CreateGroupRequest) =>
      unwrap<GroupDto>(http.POST('/api/v1/groups', { body: { description: '', ...body }, ...unsafe() })),

    setGroupMember: (group: string, username: string, role: 'member' | 'manager' = 'member') =>
      unwrap<GroupDto>(
        http.PUT('/api/v1/groups/{name}/members', {
          params: { path: { name: group } },
          body: { username, role },
          ...unsafe(),
        }),
      ),
    removeGroupMember: (group: string, username: string) =>
      unwrap<void>(
        http.DELETE('/api/v1/groups/{name}/members/{username}', {
          params: { path: { name: group, username } },
          ...unsafe(),
        }),
      ),

    listTokens: () => unwrap<TokenDto[]>(http.GET('/api/v1/tokens', safe)),
    createToken: (body: CreateTokenRequest) =>
      unwrap<CreatedTokenDto>(http.POST('/api/v1/tokens', { body, ...unsafe() })),
    revokeToken: (id: string) =>
      unwrap<void>(http.DELETE('/api/v1/tokens/{id}', { params: { path: { id } }, ...unsafe() })),

    /** The caller's saved searches, by name (a page; `nextCursor` for more). */
    listSavedSearches: (limit?: number, cursor?: string, signal?: AbortSignal) =>
      unwrap<Page<SavedSearchDto>>(
        http.GET('/api/v1/saved-searches', { params: { query: { limit, cursor } }, ...safe, signal }),
      ),
    createSavedSearch: (body: CreateSavedSearchRequest) =>
      unwrap<SavedSearchDto>(
        http.POST('/api/v1/saved-searches', { body: { kind: 'object', ...body }, ...unsafe() }),
      ),
    updateSavedSearch: (id: string, body: UpdateSavedSearchRequest) =>
      unwrap<SavedSearchDto>(
        http.PATCH('/api/v1/saved-searches/{id}', { params: { path: { id } }, body, ...unsafe() }),
      ),
    deleteSavedSearch: (id: string) =>
      unwrap<void>(http.DELETE('/api/v1/saved-searches/{id}', { params: { path: { id } }, ...unsafe() })),

    stat: (path: string) =>
      unwrap<EntryDetailDto>(http.GET('/api/v1/namespace/stat', { params: { query: { path } }, ...safe })),
    listChildren: (query: ListChildrenQuery, signal?: AbortSignal) =>
      unwrap<Page<EntryDto>>(http.GET('/api/v1/namespace/children', { params: { query }, ...safe, signal })),
    createCollection: (path: string, parents = false, attributes: EntryAttributes = {}) =>
      unwrap<EntryDto>(
        http.POST('/api/v1/namespace/collections', { body: { path, parents, ...attributes }, ...unsafe() }),
      ),
    /**
     * Creates a symbolic link at `path` to `target`, stored as written and never followed by the
     * site (409 NAME_TAKEN if the name exists). `mtime` is the link's own file time (default now).
     */
    createSymlink: (path: string, target: string, mtime?: string | number) =>
      unwrap<EntryDto>(
        http.POST('/api/v1/namespace/symlinks', {
          body: { path, target, ...(mtime !== undefined ? { mtime } : {}) },
          ...unsafe(),
        }),
      ),
    /** Sets an entry's file time and/or permission bits (`touch -d`, `chmod`); needs write access. */
    setAttributes: (path: string, attributes: EntryAttributes) =>
      unwrap<EntryDto>(
        http.PATCH('/api/v1/namespace/attributes', { body: { path, ...attributes }, ...unsafe() }),
      ),
    move: (from: string, to: string) =>
      unwrap<EntryDto>(http.POST('/api/v1/namespace/move', { body: { from, to }, ...unsafe() })),
    remove: (path: string) =>
      unwrap<TrashEntryDto>(http.DELETE('/api/v1/namespace', { params: { query: { path } }, ...unsafe() })),
    listTrash: (limit?: number, cursor?: string) =>
      unwrap<Page<TrashEntryDto>>(
        http.GET('/api/v1/trash', { params: { query: { limit, cursor } }, ...safe }),
      ),
    restore: (id: string) =>
      unwrap<EntryDto>(http.POST('/api/v1/trash/{id}/restore', { params: { path: { id } }, ...unsafe() })),
    purge: (id: string) =>
      unwrap<void>(http.DELETE('/api/v1/trash/{id}', { params: { path: { id } }, ...unsafe() })),
    permissions: (path: string) =>
      unwrap<PermissionDto[]>(http.GET('/api/v1/permissions', { params: { query: { path } }, ...safe })),
    setPermission: (body: GrantRequest) =>
      unwrap<PermissionDto[]>(http.PUT('/api/v1/permissions', { body, ...unsafe() })),

    /** The metadata triples of one object or collection. */
    metadata: (path: string) =>
      unwrap<EntryTriplesDto>(http.GET('/api/v1/metadata', { params: { query: { path } }, ...safe })),
    addMetadata: (path: string, triples: AddTriplesRequest['triples']) =>
      unwrap<TripleDto[]>(
        http.POST('/api/v1/metadata', {
          params: { query: { path } },
          body: { triples } as never,
          ...unsafe(),
        }),
      ),
    updateTriple: (id: string, body: UpdateTripleRequest) =>
      unwrap<TripleDto>(
        http.PATCH('/api/v1/metadata/triples/{id}', {
          params: { path: { id } },
          body: body as never,
          ...unsafe(),
        }),
      ),
    removeTriple: (id: string) =>
      unwrap<void>(http.DELETE('/api/v1/metadata/triples/{id}', { params: { path: { id } }, ...unsafe() })),
    /** Attribute names in use on entries the caller may read, for suggestions. */
    metadataAttributes: (prefix = '', limit = 100, signal?: AbortSignal) =>
      unwrap<MetadataAttributesDto>(
        http.GET('/api/v1/metadata/attributes', { params: { query: { prefix, limit } }, ...safe, signal }),
      ),
    /** Adds, replaces and removes triples on many entries at once, all or nothing. */
    bulkMetadata: (body: BulkMetadataRequest) =>
      unwrap<BulkMetadataResult>(http.POST('/api/v1/metadata/bulk', { body: body as never, ...unsafe() })),
    /** Finds objects (or collections) by metadata: `q` in the text form or `where` in JSON. */
    queryMetadata: (body: MetadataQueryRequest, signal?: AbortSignal) =>
      unwrap<MetadataQueryResult>(
        http.POST('/api/v1/metadata/query', { body: body as never, ...unsafe(), signal }),
      ),

    /** Conflicts between sites (docs/conflicts.md). */
    listConflicts: (
      query: Omit<ConflictListQuery, 'limit'> & { limit?: number } = {},
      signal?: AbortSignal,
    ) => unwrap<Page<ConflictDto>>(http.GET('/api/v1/conflicts', { params: { query }, ...safe, signal })),
    conflictSummary: (signal?: AbortSignal) =>
      unwrap<ConflictSummaryDto>(http.GET('/api/v1/conflicts/summary', { ...safe, signal })),
    conflict: (id: string, signal?: AbortSignal) =>
      unwrap<ConflictDto>(http.GET('/api/v1/conflicts/{id}', { params: { path: { id } }, ...safe, signal })),
    decideConflict: (id: string, body: ConflictDecisionRequest) =>
      unwrap<ConflictDto>(
        http.POST('/api/v1/conflicts/{id}/decision', {
          params: { path: { id } },
          body: body as never,
          ...unsafe(),
        }),
      ),
    decideConflicts: (body: BulkConflictDecisionRequest) =>
      unwrap<BulkConflictDecisionDto>(
        http.POST('/api/v1/conflicts/decisions', { body: body as never, ...unsafe() }),
      ),
    conflictPolicies: (path: string, kind?: ConflictKind) =>
      unwrap<ConflictPolicyDto[]>(
        http.GET('/api/v1/conflicts/policies', { params: { query: { path, kind } }, ...safe }),
      ),
    setConflictPolicy: (body: ConflictPolicyRequest) =>
      unwrap<ConflictPolicyDto>(http.PUT('/api/v1/conflicts/policies', { body: body as never, ...unsafe() })),
    removeConflictPolicy: (path: string, kind: ConflictKind) =>
      unwrap<void>(
        http.DELETE('/api/v1/conflicts/policies', { params: { query: { path, kind } }, ...unsafe() }),
      ),

    /** Placement (docs/placement.md): rules that keep copies at several sites, and the copies. */
    addPlacementRule: (body: PlacementRuleRequest) =>
      unwrap<PlacementRuleDto>(http.POST('/api/v1/placement/rules', { body: body as never, ...unsafe() })),
    /** The rules on the collection at `path` and those inherited from its ancestors (`inheritedFrom`). */
    placementRules: (query: { path: string; limit?: number; cursor?: string }, signal?: AbortSignal) =>
      unwrap<Page<PlacementRuleDto>>(
        http.GET('/api/v1/placement/rules', { params: { query }, ...safe, signal }),
      ),
    /** The sites a rule can place copies at. */
    placementSites: (signal?: AbortSignal) =>
      unwrap<PlacementSiteDto[]>(http.GET('/api/v1/placement/sites', { ...safe, signal })),
    removePlacementRule: (id: string) =>
      unwrap<void>(http.DELETE('/api/v1/placement/rules/{id}', { params: { path: { id } }, ...unsafe() })),
    /** An object's copies: site, state, whether each is wanted, and the rules that cover it. */
    objectCopies: (path: string, signal?: AbortSignal) =>
      unwrap<ObjectCopiesDto>(
        http.GET('/api/v1/placement/copies', { params: { query: { path } }, ...safe, signal }),
      ),
    /** An object's erasure layout (docs/erasure.md): k, m, where each shard is and its state. */
    objectShards: (path: string, signal?: AbortSignal) =>
      unwrap<ObjectShardsDto>(
        http.GET('/api/v1/placement/shards', { params: { query: { path } }, ...safe, signal }),
      ),
    /** Re-hashes every good shard at this site now (administrators). */
    scrubShards: () => unwrap<ErasureScrubDto>(http.POST('/api/v1/placement/erasure/scrub', unsafe())),
    /** Re-hashes this site's copy of the object now and reports every copy's state. */
    verifyObject: (path: string) =>
      unwrap<VerifyReportDto>(
        http.POST('/api/v1/placement/verify', { params: { query: { path } }, ...unsafe() }),
      ),
    /** This site's mover: its queue, transfers in flight, failures (administrators). */
    moverStatus: (signal?: AbortSignal) =>
      unwrap<MoverStatusDto>(http.GET('/api/v1/placement/mover', { ...safe, signal })),

    /** Subscriptions (docs/placement.md): a site follows a collection, every object copied to it. */
    subscribe: (body: SubscriptionRequest) =>
      unwrap<SubscriptionDto>(
        http.POST('/api/v1/placement/subscriptions', { body: body as never, ...unsafe() }),
      ),
    /** Who subscribes to what at `path` (default `/`) and below, of one subscriber when `site` is given. */
    subscriptions: (query: { path?: string; site?: string } = {}, signal?: AbortSignal) =>
      unwrap<SubscriptionListDto>(
        http.GET('/api/v1/placement/subscriptions', { params: { query }, ...safe, signal }),
      ),
    unsubscribe: (id: string) =>
      unwrap<void>(
        http.DELETE('/api/v1/placement/subscriptions/{id}', { params: { path: { id } }, ...unsafe() }),
      ),

    /** This site's cache (docs/caching.md): limit, use, hits, misses, evictions (administrators). */
    cacheStatus: (signal?: AbortSignal) =>
      unwrap<CacheStatusDto>(http.GET('/api/v1/cache', { ...safe, signal })),
    /** The cached copies at this site below `path`, most recently read first. */
    cacheEntries: (query: { path?: string; limit?: number } = {}, signal?: AbortSignal) =>
      unwrap<CacheListDto>(http.GET('/api/v1/cache/entries', { params: { query }, ...safe, signal })),
    /** Brings `path` (an object or a collection) into this site's cache in the background. */
    stage: (path: string) =>
      unwrap<StageStatusDto>(http.POST('/api/v1/cache/stage', { body: { path }, ...unsafe() })),
    stageStatus: (path: string, signal?: AbortSignal) =>
      unwrap<StageStatusDto>(
        http.GET('/api/v1/cache/stage', { params: { query: { path } }, ...safe, signal }),
      ),
    /** Stages `path` and keeps it: eviction leaves pinned copies alone. */
    pin: (path: string) =>
      unwrap<StageStatusDto>(http.POST('/api/v1/cache/pin', { body: { path }, ...unsafe() })),
    unpin: (path: string) =>
      unwrap<CacheChangeDto>(http.POST('/api/v1/cache/unpin', { body: { path }, ...unsafe() })),
    /** Evicts the cached copies below `path` now (never a pinned, wanted or last good copy). */
    evict: (path: string) =>
      unwrap<CacheChangeDto>(http.POST('/api/v1/cache/evict', { body: { path }, ...unsafe() })),

    /** This site's storage resources: kind, where, default, health, use (administrators; docs/storage.md). */
    storageResources: (signal?: AbortSignal) =>
      unwrap<StorageResourceListDto>(http.GET('/api/v1/storage/resources', { ...safe, signal })),
    /** Moves this site's copies under a collection to another of its resources (administrators). */
    moveToResource: (path: string, resource: string) =>
      unwrap<StorageMoveDto>(http.POST('/api/v1/storage/moves', { body: { path, resource }, ...unsafe() })),
    storageMove: (id: string, signal?: AbortSignal) =>
      unwrap<StorageMoveDto>(
        http.GET('/api/v1/storage/moves/{id}', { params: { path: { id } }, ...safe, signal }),
      ),
    storageMoves: (signal?: AbortSignal) =>
      unwrap<StorageMoveListDto>(http.GET('/api/v1/storage/moves', { ...safe, signal })),
    /** Objects and bytes below a collection, per child collection and per site (docs/usage.md). */
    usage: (query: { path?: string; children?: number } = {}, signal?: AbortSignal) =>
      unwrap<UsageDto>(http.GET('/api/v1/usage', { params: { query }, ...safe, signal })),

    /** Replication per peer, recent cycles (administrators). */
    replicationStatus: (signal?: AbortSignal) =>
      unwrap<ReplicationStatusDto>(http.GET('/api/v1/replication/status', { ...safe, signal })),
    /** Lag per peer over the last `hours` (one sample per cycle; administrators). */
    replicationLag: (hours: number, signal?: AbortSignal) =>
      unwrap<ReplicationLagDto>(
        http.GET('/api/v1/replication/lag', { ...safe, params: { query: { hours } } as never, signal }),
      ),
    /** Runs one replication cycle now (administrators). */
    runReplicationCycle: () => unwrap<ReplicationCycleDto>(http.POST('/api/v1/replication/cycle', unsafe())),

    /**
     * Uploads bytes (a Blob, a buffer, or a stream with `duplex: 'half'` support) to a path, with the
     * object's file time and mode if given (default: now, and the mode unchanged or 0644).
     */
    async upload(
      path: string,
      body: NonNullable<RequestInit['body']>,
      opts: {
        overwrite?: boolean;
        sha256?: string;
        contentLength?: number;
        signal?: AbortSignal;
      } & EntryAttributes = {},
    ): Promise<EntryDto> {
      const h: Record<string, string> = { ...headers(true), 'content-type': 'application/octet-stream' };
      if (opts.sha256) h['x-checksum-sha256'] = opts.sha256;
      if (opts.mtime !== undefined) h[MTIME_HEADER] = String(opts.mtime);
      if (opts.mode !== undefined) {
        h[MODE_HEADER] = typeof opts.mode === 'number' ? opts.mode.toString(8) : opts.mode;
      }
      if (opts.contentLength !== undefined) h['content-length'] = String(opts.contentLength);
      const init: RequestInit & { duplex?: 'half' } = {
        method: 'PUT',
        headers: h,
        body,
        signal: opts.signal,
      };
      if (typeof (body as ReadableStream | undefined)?.getReader === 'function') init.duplex = 'half';
      const res = await fetchImpl(dataUrl(path, opts.overwrite ? '&overwrite=true' : ''), init);
      const payload: unknown = await res.json().catch(() => undefined);
      if (!res.ok) throw toApiError(res.status, payload);
      return payload as EntryDto;
    },

    /**
     * Creates many objects in one collection in one request, all or nothing (409 NAME_TAKEN with
     * `details.names` when any name exists). Each file's `name` becomes the object's name.
     */
    async uploadMany(collection: string, files: { name: string; body: Blob }[]): Promise<EntryDto[]> {
      const form = new FormData();
      for (const f of files) form.append('file', f.body, f.name);
      const res = await fetchImpl(
        `${options.baseUrl}/api/v1/data/batch?path=${encodeURIComponent(collection)}`,
        { method: 'POST', headers: headers(true), body: form },
      );
      const payload: unknown = await res.json().catch(() => undefined);
      if (!res.ok) throw toApiError(res.status, payload);
      return payload as EntryDto[];
    },

    /**
     * Opens a resumable upload session (`/api/v1/uploads`). With `base` it is a partial update of
     * an existing object: see `uploadPart`, then `completeUpload`.
     */
    createUpload: (request: CreateUploadRequest) =>
      sessionCall<UploadSessionDto>('POST', '', JSON.stringify(request)),
    getUpload: (id: string) => sessionCall<UploadSessionDto>('GET', `/${id}`),
    /**
     * Sends bytes at `offset` of a session, with their SHA-256 when given (X-Chunk-Sha256). In a
     * partial update any offset below the new size; otherwise the session's `received`.
     */
    uploadPart: (id: string, offset: number, body: Uint8Array, sha256?: string) =>
      sessionCall<UploadSessionDto>(
        'PUT',
        `/${id}?offset=${offset}`,
        body as Uint8Array<ArrayBuffer>,
        sha256 ? { [CHUNK_SHA256_HEADER]: sha256 } : {},
      ),
    /**
     * Commits the session as the object's new version (or the new object), with its file time and
     * mode if given (default: now, and the mode unchanged or 0644).
     */
    completeUpload: (id: string, sha256?: string, attributes: EntryAttributes = {}) =>
      sessionCall<EntryDto>(
        'POST',
        `/${id}/complete`,
        JSON.stringify({ ...(sha256 ? { sha256 } : {}), ...attributes }),
      ),
    abortUpload: (id: string) => sessionCall<void>('DELETE', `/${id}`),

    /**
     * Fetches an object's bytes; `range` is inclusive, as in HTTP. An object the site stages from a
     * compound resource's archive first (`202`, docs/storage.md) is asked for again after each
     * Retry-After, with `onStaging` told the progress, until its bytes come.
     */
    async download(
      path: string,
      range?: { start: number; end: number },
      options: { onStaging?(progress: ObjectStagingDto): void; signal?: AbortSignal } = {},
    ): Promise<Response> {
      const h = headers(false);
      if (range) h.range = `bytes=${range.start}-${range.end}`;
      for (;;) {
        const res = await fetchImpl(dataUrl(path), { headers: h, signal: options.signal ?? null });
        if (res.status === 202) {
          const staging = (await res.json()) as ObjectStagingDto;
          options.onStaging?.(staging);
          const seconds = Math.min(10, Math.max(1, Number(res.headers.get('retry-after')) || 2));
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
          options.signal?.throwIfAborted();
          continue;
        }
        if (!res.ok) throw toApiError(res.status, await res.json().catch(() => undefined));
        return res;
      }
    },

    downloadUrl: (path: string) => dataUrl(path),
  };
}

export type TributaryClient = ReturnType<typeof createTributaryClient>;

function toApiError(status: number, body: unknown): ApiError {
  const err = (body as ErrorBody | undefined)?.error;
  if (err && typeof err.code === 'string') return new ApiError(status, err.code, err.message, err.details);
  return new ApiError(
    status,
    status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed,
    `HTTP ${status}`,
  );
}
