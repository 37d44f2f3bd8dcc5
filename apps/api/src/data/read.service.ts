import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, splitPath, type ObjectStagingDto } from '@tributary/shared';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { NamespaceRepository, type ObjectRecord } from '../namespace/namespace.repository';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { PeerAvailability } from '../sites/peer-availability';
import { CacheService } from '../caching/cache.service';
import { ErasureRepository } from '../erasure/erasure.repository';
import { currentShardSet, ShardIO, type ShardSet } from '../erasure/shard-io';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import { DataRepository } from './data.repository';
import { baseChanged, isASymlink, noPeerLinkToHolder } from './data.errors';
import { baseAcceptable, holdingSite, servableCopies } from './holding-site';

/** Most objects, and most bytes together, one batch read may return. */
export const MAX_BATCH_READ_OBJECTS = 1000;
export const MAX_BATCH_READ_BYTES = 256 * 1024 * 1024;

/**
 * Where an object's bytes are read from: a key in this site's storage, or the peer sites holding a
 * good copy of exactly the bytes with SHA-256 `checksum` (tried in turn, see `read`).
 */
export type ByteSource =
  | {
      kind: 'local';
      key: string;
      /** Set for an object's copy (not a peer's request): the cache counts the read. */
      objectId?: bigint;
      /** The copy is a cached one (docs/caching.md). */
      cached?: boolean;
    }
  | {
      kind: 'remote';
      objectId: bigint;
      checksum: string;
      sites: string[];
      /** The object's size, when these are its current bytes: a whole read of them fills the cache. */
      size?: number;
      /** The object's shards, read when no site with a whole copy answers (docs/erasure.md). */
      shards?: ShardSet;
    }
  | {
      /** No whole copy anywhere: decoded from any k of the object's shards (docs/erasure.md). */
      kind: 'erasure';
      shards: ShardSet;
    };

/** A peer's answer with the bytes, and how to stop receiving them. */
interface PeerAnswer {
  site: string;
  body: AsyncIterator<Uint8Array>;
  abort: (why: Error) => void;
}

/** Retry-After of a download answered 202 while its bytes are staged from an archive. */
const STAGING_RETRY_SECONDS = 2;

/** A peer's byte stream that has sent nothing for this long (after its headers) is given up. */
const MIN_STALL_MS = 10_000;

/** An object's bytes, opened and ready to be sent to one receiver. */
export interface ObjectBytes {
  /** Writes the bytes to `out`, leaving it open; resolves with the number of bytes sent. */
  sendTo(out: Writable): Promise<number>;
}

/** A peer's route to the bytes of an object it holds (see PeerDataController). */
export const PEER_OBJECT_PATH = '/api/v1/replication/peer/objects';

/**
 * Reads of object bytes: checked for the caller, then from this site's copy or, where only another
 * site holds one, through that site (location transparency); and this site's copies for peers.
 */
@Injectable()
export class ReadService {
  constructor(
    private readonly namespace: NamespaceService,
    private readonly namespaceRepo: NamespaceRepository,
    private readonly repo: DataRepository,
    private readonly access: AccessService,
    private readonly storage: StorageService,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
    private readonly replication: ReplicationService,
    private readonly availability: PeerAvailability,
    private readonly cache: CacheService,
    private readonly erasure: ErasureRepository,
    private readonly shardIO: ShardIO,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  /**
   * A download's bytes on a compound resource here held only in its archive (docs/storage.md): the
   * staging into the cache (started now if it was not) after waiting up to `waitMs` for it; null
   * when the bytes can be sent.
   */
  async staging(
    path: string,
    object: ObjectRecord,
    source: ByteSource,
    waitMs: number,
  ): Promise<ObjectStagingDto | null> {
    if (source.kind !== 'local' || Number(object.size) === 0) return null;
    const progress = await this.storage.readiness(source.key, waitMs);
    if (!progress) return null;
    return { path, status: 'staging', ...progress, retryAfterSeconds: STAGING_RETRY_SECONDS };
  }

  /**
   * Checks read access and finds where to read the object's bytes: this site's copy, or else a
   * good copy at another site (read through that site, transparently to the caller).
   */
  async openForRead(
    principal: Principal,
    path: string,
  ): Promise<{ object: ObjectRecord; source: ByteSource }> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.namespace.resolve(path);
    await this.access.requireAt(principal, path, entry && entryTarget(entry), 'read', () => notFound(path));
    if (!entry || entry.kind !== 'object')
      throw new DomainError(ErrorCode.NotAnObject, `${path} is a collection; list it instead`);
    if (entry.linkTarget !== null) throw isASymlink(path, entry.linkTarget);
    return { object: entry, source: await this.sourceWithShards(path, entry) };
  }

  /**
   * `sourceOf`, and where this site holds no whole copy, the object's shards of its current bytes
   * (docs/erasure.md): read when no whole copy is left, or when no site holding one answers.
   */
  private async sourceWithShards(path: string, entry: ObjectRecord): Promise<ByteSource> {
    if (servableCopies(entry).some((r) => r.siteId === this.site.siteId)) return this.sourceOf(path, entry);
    const object = { id: entry.id.toString(), size: Number(entry.size), checksum: entry.checksum };
    const shards = currentShardSet(object, await this.erasure.shardsOf([object.id]));
    if (!shards) return this.sourceOf(path, entry);
    let source: ByteSource;
    try {
      source = this.sourceOf(path, entry);
    } catch {
      return { kind: 'erasure', shards };
    }
    return source.kind === 'remote' ? { ...source, shards } : source;
  }

  /**
   * For a partial update of `path` made from version `base`: the object (read access needed) and
   * where to read the base's bytes. The site holding the bytes decides on versions. Held here, the
   * object must be at `base` exactly (version and SHA-256), and the bytes are this site's. Held at
   * another site, this site's catalog may lag behind updates forwarded there (a client that just
   * made one knows the newer version), so a newer base is accepted and the bytes are read from the
   * holding site, which checks the version again, under the object's lock, when the update arrives:
   * versions only grow there, so bytes read from it after the client saw `base` are that version's
   * whenever that check passes.
   */
  async openBase(
    principal: Principal,
    path: string,
    base: { version: number; sha256: string },
  ): Promise<{ object: ObjectRecord; source: ByteSource }> {
    const { object } = await this.openForRead(principal, path);
    const holder = holdingSite(object, this.site.siteId);
    if (!baseAcceptable(object, base, holder === this.site.siteId)) throw baseChanged(path, object.version);
    // The base is the bytes this catalog knows: any good copy of them will do.
    if (object.version === base.version) return { object, source: await this.sourceWithShards(path, object) };
    // A newer base (this catalog lags): only the holding site has its bytes for certain.
    if (!this.replication.peers.peer(holder)) throw noPeerLinkToHolder(path, holder);
    return {
      object,
      source: { kind: 'remote', objectId: object.id, checksum: base.sha256, sites: [holder] },
    };
  }

  /**
   * Where an object's bytes can be read from: this site's copy when it is good and of the current
   * bytes, else the peers with such a copy (by id: the holding site first), tried in turn by `read`.
   */
  private sourceOf(path: string, entry: ObjectRecord): ByteSource {
    const good = servableCopies(entry);
    const local = good.find((r) => r.siteId === this.site.siteId);
    if (local)
      return { kind: 'local', key: local.physicalPath, objectId: entry.id, cached: local.cached === true };
    const sites = [...new Set(good.map((r) => r.siteId))].sort();
    const linked = sites.filter((s) => this.replication.peers.peer(s));
    if (linked.length === 0) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        good.length === 0
          ? `${path} has no good copy of its bytes at any site now; try again later`
          : `the bytes of ${path} are held at ${sites.join(', ')}, which this site has no peer link to`,
        undefined,
        { 'retry-after': String(Math.max(1, Math.round(this.config.replication.cycleMs / 1000))) },
      );
    }
    return {
      kind: 'remote',
      objectId: entry.id,
      checksum: entry.checksum,
      sites: linked,
      size: Number(entry.size),
    };
  }

  /**
   * Opens many objects for one batch read, all or nothing: every path must be an object the caller
   * may read, and together at most MAX_BATCH_READ_BYTES. Objects are looked up per collection in
   * one round of queries; when the caller may read everything in a collection, its objects need no
   * check each. Anything unusual (a missing name, a collection, an object readable only by its own
   * grant) goes through openForRead, so the errors are the same as for a single download.
   */
  async openManyForRead(
    principal: Principal,
    paths: string[],
  ): Promise<Array<{ object: ObjectRecord; source: ByteSource }>> {
    const opened = new Array<{ object: ObjectRecord; source: ByteSource }>(paths.length);
    const byParent = new Map<string, number[]>();
    for (const [index, path] of paths.entries()) {
      this.access.assertWithinToken(principal, path);
      const parent = path === '/' ? '/' : splitPath(path).parent;
      byParent.set(parent, [...(byParent.get(parent) ?? []), index]);
    }
    const parents = [...byParent.entries()];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < parents.length) {
        const [parent, indexes] = parents[next++]!;
        const collection = await this.namespaceRepo.findCollection(parent);
        const readable =
          collection !== null && levelAtLeast(await this.access.inheritedBelow(principal, parent), 'read');
        const found =
          collection && readable
            ? await this.namespaceRepo.findObjects(
                collection,
                indexes.map((i) => splitPath(paths[i]!).name),
              )
            : new Map<string, ObjectRecord>();
        for (const index of indexes) {
          const path = paths[index]!;
          const object = path === '/' ? undefined : found.get(splitPath(path).name);
          opened[index] =
            object && object.linkTarget === null
              ? { object, source: await this.sourceWithShards(path, object) }
              : await this.openForRead(principal, path);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, parents.length) }, worker));
    const total = opened.reduce((sum, o) => sum + Number(o.object.size), 0);
    if (total > MAX_BATCH_READ_BYTES) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `these objects hold ${total} bytes together; one batch read returns at most ${MAX_BATCH_READ_BYTES}`,
      );
    }
    return opened;
  }

  /**
   * The bytes (or a range of them) from where `openForRead` found them, for sending. A peer is
   * asked before this resolves, so an unreachable holding site is an error before any answer.
   * At a caching site, a whole read of bytes held elsewhere keeps them here as they are sent, and a
   * range asks for them in the background (CacheService.faultIn).
   */
  async openBytes(source: ByteSource, range?: { start: number; end: number }): Promise<ObjectBytes> {
    if (source.kind === 'local') {
      if (source.objectId !== undefined) this.cache.served(source.objectId, source.cached === true);
      // Opened before the answer: a failing store is a 503 STORAGE_UNAVAILABLE, not a cut answer.
      return this.storage.prepareSend(source.key, range);
    }
    const stream = await this.read(source, range);
    const cached =
      source.kind === 'erasure' || source.size === undefined
        ? undefined
        : this.cache.faultIn(
            { objectId: source.objectId, size: source.size, checksum: source.checksum },
            range,
            stream,
          );
    if (cached) return cached;
    return {
      sendTo: async (out) => {
        let sent = 0;
        stream.on('data', (chunk: Buffer) => (sent += chunk.length));
        await pipeline(stream, out, { end: false });
        return sent;
      },
    };
  }

  /**
   * The bytes (or a range of them) from where `openForRead` found them. From peers: each site with a
   * good copy in turn, sites that did not answer lately last (PeerAvailability), each given
   * `peerReads.connectTimeoutMs` to connect and send its answer's headers (a stopped process's
   * kernel still accepts the connection, so the connect alone proves nothing), and only an answer
   * with the expected bytes (its ETag) is taken. A stream that stalls or breaks midway goes on from
   * the next site, from the byte it had reached. Throws REPLICA_UNAVAILABLE (503) when no site answers.
   */
  async read(source: ByteSource, range?: { start: number; end: number }): Promise<Readable> {
    if (source.kind === 'local') return this.storage.open(source.key, range);
    if (source.kind === 'erasure') return this.decoded(source.shards, range);
    let answer: PeerAnswer;
    try {
      answer = await this.answerFrom(source, range?.start ?? 0, range?.end, new Set());
    } catch (err) {
      // No site with a whole copy answered: a degraded read from the shards, when there are any.
      if (!source.shards || !(err instanceof DomainError)) throw err;
      return this.decoded(source.shards, range);
    }
    const state = { answer, closed: false };
    const stream = Readable.from(this.continued(source, range, state), { objectMode: false });
    // A receiver that went away stops the peer's answer at once (not after it sends again).
    stream.once('close', () => {
      state.closed = true;
      state.answer.abort(new Error('the read ended'));
    });
    return stream;
  }

  /**
   * The bytes (range end inclusive) decoded from any k shards (docs/erasure.md). The first stripe
   * is decoded before this resolves, so too few reachable shards is a 503 before any answer.
   */
  private async decoded(shards: ShardSet, range?: { start: number; end: number }): Promise<Readable> {
    const size = shards.layout.size;
    const bytes = this.shardIO.decode(shards, range?.start ?? 0, range ? range.end + 1 : size);
    let first: IteratorResult<Buffer>;
    try {
      first = await bytes.next();
    } catch (err) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `no whole copy could be read, and too few shards answered (${err instanceof Error ? err.message : String(err)}); try again later`,
        undefined,
        { 'retry-after': String(Math.max(1, Math.ceil(this.config.peerReads.downMs / 1000))) },
      );
    }
    async function* all(): AsyncGenerator<Buffer> {
      if (first.done) return;
      yield first.value;
      yield* bytes;
    }
    const stream = Readable.from(all(), { objectMode: false });
    stream.once('close', () => void bytes.return(undefined));
    return stream;
  }

  /** The bytes of a peer's answer, going on at the next site if it stalls or breaks. */
  private async *continued(
    source: Extract<ByteSource, { kind: 'remote' }>,
    range: { start: number; end: number } | undefined,
    state: { answer: PeerAnswer; closed: boolean },
  ): AsyncGenerator<Uint8Array> {
    const stallMs = Math.max(MIN_STALL_MS, 5 * this.config.peerReads.connectTimeoutMs);
    const used = new Set([state.answer.site]);
    let offset = range?.start ?? 0;
    try {
      for (;;) {
        const answer = state.answer;
        let step: IteratorResult<Uint8Array>;
        const timer = setTimeout(
          () => answer.abort(new Error(`${answer.site} sent nothing for ${stallMs} ms`)),
          stallMs,
        );
        try {
          step = await answer.body.next();
        } catch (err) {
          if (state.closed) throw err;
          // The site stopped sending: the rest from another one.
          this.availability.markDown(answer.site);
          state.answer = await this.answerFrom(source, offset, range?.end, used);
          used.add(state.answer.site);
          continue;
        } finally {
          clearTimeout(timer);
        }
        if (step.done) return;
        offset += step.value.length;
        yield step.value;
      }
    } finally {
      state.answer.abort(new Error('the read ended'));
    }
  }

  /**
   * The first site of `source` (not in `skip`) that answers with the expected bytes from `from`
   * (through `to`, or the end), in PeerAvailability's order.
   */
  private async answerFrom(
    source: Extract<ByteSource, { kind: 'remote' }>,
    from: number,
    to: number | undefined,
    skip: Set<string>,
  ): Promise<PeerAnswer> {
    const why: string[] = [];
    let newer = 0;
    const partial = from > 0 || to !== undefined;
    const headers: Record<string, string> = partial ? { range: `bytes=${from}-${to ?? ''}` } : {};
    const timeoutMs = this.config.peerReads.connectTimeoutMs;
    for (const site of this.availability.order(source.sites.filter((s) => !skip.has(s)))) {
      const controller = new AbortController();
      const timer = setTimeout(
        () => controller.abort(new Error(`no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      let res: Response;
      try {
        res = await this.replication.peers.stream(
          site,
          `${PEER_OBJECT_PATH}/${source.objectId}`,
          headers,
          controller.signal,
        );
      } catch (err) {
        this.availability.markDown(site);
        why.push(err instanceof Error ? err.message : `${site}: ${String(err)}`);
        continue;
      } finally {
        clearTimeout(timer);
      }
      this.availability.markUp(site);
      const etag = res.headers.get('etag');
      if (res.ok && res.body && (!partial || res.status === 206) && etag === `"${source.checksum}"`) {
        const body = (res.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
        return { site, body, abort: (e) => controller.abort(e) };
      }
      controller.abort(new Error('not the bytes asked for'));
      if (res.ok && etag !== `"${source.checksum}"`) {
        newer++;
        why.push(`${site} holds other bytes now (this site's catalog has not had their update yet)`);
      } else why.push(`${site} answered ${res.status}`);
    }
    // Sites that hold newer bytes: the next replication exchange brings them here; sites that did
    // not answer: the memory of them expires.
    const retryMs =
      newer > 0 && newer === why.length ? this.config.replication.cycleMs : this.config.peerReads.downMs;
    throw new DomainError(
      ErrorCode.ReplicaUnavailable,
      `no site holding the bytes could serve them now (${why.join('; ') || 'none left to try'}); try again later`,
      undefined,
      { 'retry-after': String(Math.max(1, Math.ceil(retryMs / 1000))) },
    );
  }

  /** For a peer's request: this site's own copy of an object's bytes, by object id. */
  async openLocalCopy(objectId: bigint): Promise<{ size: number; checksum: string; key: string }> {
    const entry = await this.repo.localReplica(objectId, this.site.siteId);
    if (!entry) throw new DomainError(ErrorCode.NotFound, `object ${objectId} has no good copy at this site`);
    return entry;
  }

  countSent(bytes: number): void {
    this.metrics.bytesOut.inc(bytes);
  }
}
