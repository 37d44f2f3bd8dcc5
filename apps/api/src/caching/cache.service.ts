import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { ErrorCode, type CacheChangeDto, type CacheListDto, type CacheStatusDto } from '@tributary/shared';
import type { StageStatusDto } from '@tributary/shared';
import { wantedSites } from '@tributary/placement';
import { createHash, randomUUID } from 'node:crypto';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Counter, Gauge } from 'prom-client';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { PEER_PLACEMENT_PATH } from '../mover/copy-transfers';
import { MoverRepository } from '../mover/mover.repository';
import { MoverService } from '../mover/mover.service';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { PeerAvailability } from '../sites/peer-availability';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import { CacheRepository, type CacheScope, type EvictionCandidate } from './cache.repository';

/** Fault-in drafts are named `f<object id>-<random>` in the storage's copy drafts. */
const DRAFT_PREFIX = 'f';
/**
 * Bytes sent to the reader but not yet written to the draft beyond which the fault-in gives up
 * rather than slow the reader down to the disk's pace (the mover fetches the object instead).
 */
const MAX_UNWRITTEN = 64 * 1024 * 1024;
/** The draft is written in pieces of this size (and the tee's buffers hold as much). */
const WRITE_BYTES = 1024 * 1024;
/** A range read asks for its object in the background at most this often. */
const ASK_AGAIN_MS = 10_000;
/** Reads noted (for the eviction's order) are written at most this often. */
const TOUCH_FLUSH_MS = 1000;

/** What a read faulting an object in needs to know of it. */
export interface FaultInObject {
  objectId: bigint;
  size: number;
  checksum: string;
}

/** The draft's writes fell too far behind the reader. */
class DiskBehindError extends Error {
  constructor() {
    super('the disk fell behind the reader');
  }
}

/** Why a cached copy was not evicted. */
type Kept = string;

/**
 * This site's cache (docs/caching.md): reads of bytes held elsewhere keep them here as cached
 * copies (fault-in, one transfer: teed into a draft while sent to the reader, verified, then
 * committed); a size limit held by evicting the least recently read cached copies, never one a rule
 * wants nor the last good copy (another site promises to keep its own for the lease); pins;
 * staging a collection ahead (pending cached rows the mover fills); hits, misses, bytes and
 * evictions in /metrics.
 */
@Injectable()
export class CacheService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Cache');
  private readonly hits: Counter;
  private readonly misses: Counter;
  private readonly bytesIn: Counter;
  private readonly evictions: Counter;
  /** Objects being faulted in now (one transfer each at a time). */
  private readonly faulting = new Set<string>();
  private readonly touched = new Set<string>();
  /** Objects a range read asked the mover for lately, and when. */
  private readonly askedFor = new Map<string, number>();
  private touchTimer: NodeJS.Timeout | undefined;
  private passTimer: NodeJS.Timeout | undefined;
  /** Room is made and copies recorded one at a time, so two fault-ins do not both take the last room. */
  private commits: Promise<unknown> = Promise.resolve();
  private stopped = false;
  private readonly background = new Set<Promise<unknown>>();

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly repo: CacheRepository,
    private readonly site: SiteContext,
    private readonly storage: StorageService,
    private readonly mover: MoverService,
    private readonly moverRepo: MoverRepository,
    private readonly replication: ReplicationService,
    private readonly availability: PeerAvailability,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
    metrics: MetricsRegistry,
  ) {
    const registers = [metrics.registry];
    this.hits = new Counter({
      name: 'tributary_cache_hits_total',
      help: 'Reads served from a cached copy at this site',
      registers,
    });
    this.misses = new Counter({
      name: 'tributary_cache_misses_total',
      help: 'Reads at this caching site whose bytes came from another site',
      registers,
    });
    this.bytesIn = new Counter({
      name: 'tributary_cache_bytes_total',
      help: 'Bytes faulted into the cache by reads',
      registers,
    });
    this.evictions = new Counter({
      name: 'tributary_cache_evictions_total',
      help: 'Cached copies evicted to keep the cache within its limit (or on request)',
      registers,
    });
    new Gauge({
      name: 'tributary_cache_limit_bytes',
      help: 'The cache size limit (CACHE_MAX_BYTES; 0: no cache)',
      registers,
      collect: function (this: Gauge) {
        this.set(config.cache.maxBytes);
      },
    });
    const siteId = (): string => this.site.siteId;
    new Gauge({
      name: 'tributary_cache_used_bytes',
      help: 'Bytes of the cached copies at this site (good, or on their way)',
      registers,
      collect: async function (this: Gauge) {
        if (!siteId()) return;
        const usage = await repo.usage(siteId()).catch(() => undefined);
        if (usage) this.set(usage.bytes);
      },
    });
  }

  get enabled(): boolean {
    return this.config.cache.maxBytes > 0;
  }

  get limit(): number {
    return this.config.cache.maxBytes;
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    const check = (): void => {
      if (this.stopped) return;
      if (!this.site.siteId) {
        this.passTimer = setTimeout(check, 200);
        return;
      }
      // A read cut off by a crash left its draft: it never became a copy.
      this.track(
        this.dropDrafts().then(
          () => this.schedulePass(0),
          (err: unknown) => {
            this.logger.warn(`could not sweep the fault-in drafts: ${String(err)}`);
            this.schedulePass(0);
          },
        ),
      );
    };
    check();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.passTimer);
    clearTimeout(this.touchTimer);
    await Promise.allSettled([...this.background]);
    await this.flushTouches().catch(() => undefined);
  }

  // ---- reads ----

  /** A read served from this site's copy: a hit when that copy is a cached one. */
  served(objectId: bigint, cached: boolean): void {
    if (!cached || !this.enabled) return;
    this.hits.inc();
    this.touched.add(objectId.toString());
    this.touchTimer ??= setTimeout(() => {
      this.touchTimer = undefined;
      void this.flushTouches().catch((err: unknown) =>
        this.logger.warn(`could not note the cache's reads: ${String(err)}`),
      );
    }, TOUCH_FLUSH_MS);
    this.touchTimer.unref();
  }

  /**
   * A read of bytes held elsewhere, about to be sent: the whole object is teed into the cache as it
   * goes to the reader (the returned sender), a range leaves a pending cached row for the mover to
   * fill in the background; undefined when the read passes through (no cache, too large, being
   * faulted in by another read).
   */
  faultIn(
    object: FaultInObject,
    range: { start: number; end: number } | undefined,
    stream: Readable,
  ): { sendTo(out: Writable): Promise<number> } | undefined {
    if (!this.enabled || this.stopped) return undefined;
    this.misses.inc();
    if (object.size > this.limit) return undefined;
    const id = object.objectId.toString();
    if (range && !(range.start === 0 && range.end === object.size - 1)) {
      // A reader of ranges (the mount) asks for many: the row is asked for once a while.
      const now = Date.now();
      if ((this.askedFor.get(id) ?? 0) + ASK_AGAIN_MS < now) {
        if (this.askedFor.size > 10_000) this.askedFor.clear();
        this.askedFor.set(id, now);
        this.track(this.fillLater(id));
      }
      return undefined;
    }
    if (this.faulting.has(id)) return undefined;
    this.faulting.add(id);
    // Released once the copy is recorded or dropped (tee's background part).
    return { sendTo: (out) => this.tee(object, stream, out) };
  }

  /** A pending cached row here for the object: the mover brings its bytes in the background. */
  private async fillLater(objectId: string): Promise<void> {
    await this.repo
      .request(this.site.siteId, this.site.resourceId, { kind: 'object', id: objectId }, false)
      .catch((err: unknown) =>
        this.logger.warn(`could not ask for object ${objectId} in the background: ${String(err)}`),
      );
  }

  /**
   * Sends the bytes to `out` and writes them into a draft at once; once all are sent the draft is
   * hashed, verified and recorded in the background (the reader waits neither for the hash nor for
   * the flush: on a machine short of cores the hash in the stream cost the reader a third of its
   * rate). A read that breaks off leaves nothing.
   */
  private async tee(object: FaultInObject, stream: Readable, out: Writable): Promise<number> {
    const objectId = object.objectId.toString();
    const store = this.storage.copies;
    const draft = `${DRAFT_PREFIX}${objectId}-${randomUUID().slice(0, 8)}`;
    let writer: Awaited<ReturnType<typeof store.open>> | undefined;
    let failure: unknown;
    try {
      await store.create(draft);
      writer = await store.open(draft);
    } catch (err) {
      failure = err;
    }
    // Pieces are gathered into writes of WRITE_BYTES, made one after another in order: few system
    // calls, and the draft laid out as a sequential write would.
    let position = 0;
    let flushed = 0;
    let unwritten = 0;
    let gathered: Buffer[] = [];
    let gatheredBytes = 0;
    let writes: Promise<void> = Promise.resolve();
    const flush = (): Promise<void> => {
      if (gatheredBytes === 0 || !writer) return writes;
      const bytes = gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, gatheredBytes);
      const at = flushed;
      flushed += bytes.length;
      gathered = [];
      gatheredBytes = 0;
      unwritten += bytes.length;
      const draftWriter = writer;
      writes = writes
        .then(() => (failure === undefined ? draftWriter.write(bytes, 0, bytes.length, at) : undefined))
        .then(
          () => void (unwritten -= bytes.length),
          (err: unknown) => {
            failure ??= err;
            unwritten -= bytes.length;
          },
        );
      return writes;
    };
    const tee = new Transform({
      readableHighWaterMark: WRITE_BYTES,
      writableHighWaterMark: WRITE_BYTES,
      transform: (chunk: Buffer, _encoding, done) => {
        if (writer && failure === undefined) {
          gathered.push(chunk);
          gatheredBytes += chunk.length;
          position += chunk.length;
          if (gatheredBytes >= WRITE_BYTES) void flush();
          // The disk has fallen far behind (a busy machine): the reader is not held back for the
          // cache; the draft is dropped and the mover brings the object in the background.
          if (unwritten > MAX_UNWRITTEN) {
            failure ??= new DiskBehindError();
            gathered = [];
            gatheredBytes = 0;
          }
        }
        done(null, chunk);
      },
    });
    let sent = 0;
    tee.on('data', (chunk: Buffer) => (sent += chunk.length));
    try {
      await pipeline(stream, tee, out, { end: false });
    } catch (err) {
      this.track(this.discard(objectId, draft, writer, writes));
      throw err;
    }
    this.track(
      this.record(
        object,
        draft,
        writer,
        flush(),
        () => (failure === undefined ? position : undefined),
        () => failure,
      ),
    );
    return sent;
  }

  private async discard(
    objectId: string,
    draft: string,
    writer: { close(): Promise<void> } | undefined,
    writes: Promise<void>,
  ): Promise<void> {
    try {
      await writes.catch(() => undefined);
      await writer?.close().catch(() => undefined);
      await this.storage.copies.remove(draft).catch(() => undefined);
    } finally {
      this.faulting.delete(objectId);
    }
  }

  /** The whole object was read: verified, room made, recorded as a good cached copy. */
  private async record(
    object: FaultInObject,
    draft: string,
    writer: { close(): Promise<void> } | undefined,
    writes: Promise<void>,
    written: () => number | undefined,
    failure: () => unknown,
  ): Promise<void> {
    const objectId = object.objectId.toString();
    const store = this.storage.copies;
    try {
      await writes;
      await writer?.close();
      const size = written();
      if (!writer || size === undefined) {
        await store.remove(draft);
        if (failure() instanceof DiskBehindError) await this.fillLater(objectId);
        return;
      }
      // Hashed from the draft (the page cache, just written), off the reader's way.
      const hash = createHash('sha256');
      for await (const piece of store.read(draft) as AsyncIterable<Buffer>) hash.update(piece);
      const m = { size, sha256: hash.digest('hex') };
      if (m.size !== object.size || m.sha256 !== object.checksum.replace(/^sha256:/, '')) {
        this.logger.warn(`the bytes read for object ${objectId} were not its bytes; not cached`);
        return void (await store.remove(draft));
      }
      const staged = await store.adopt(draft, m);
      // An object store's staged bytes keep the fresh key they already sit under (no copy).
      const key = staged.key ?? randomUUID();
      let placed = false;
      const outcome = await this.serially(async () => {
        if (!(await this.makeRoom(object.size))) return { done: false as const, reason: 'no room' };
        return this.repo.commitFaultIn(
          {
            siteId: this.site.siteId,
            resourceId: this.site.resourceId,
            objectId,
            key,
            size: m.size,
            checksum: object.checksum,
          },
          async () => {
            await staged.commit(key);
            placed = true;
          },
        );
      }).catch(async (err: unknown) => {
        if (placed) await this.storage.remove(key).catch(() => undefined);
        throw err;
      });
      if (!outcome.done) {
        await staged.discard().catch(() => undefined);
        await store.remove(draft).catch(() => undefined);
        return;
      }
      this.bytesIn.inc(m.size);
      // A local draft was renamed into place; an object store's was uploaded and is left behind.
      await store.remove(draft).catch(() => undefined);
      if (outcome.previousKey && outcome.previousKey !== key)
        await this.storage.remove(outcome.previousKey).catch(() => undefined);
    } catch (err) {
      this.logger.warn(`could not keep object ${objectId} in the cache: ${String(err)}`);
      await store.remove(draft).catch(() => undefined);
    } finally {
      this.faulting.delete(objectId);
    }
  }

  // ---- the limit ----

  /**
   * Evicts least recently read cached copies until `extra` more bytes fit within the limit;
   * whether they fit.
   */
  private async makeRoom(extra: number): Promise<boolean> {
    const usage = await this.repo.usage(this.site.siteId);
    let excess = usage.bytes + extra - this.limit;
    if (excess <= 0) return true;
    for (const candidate of await this.repo.candidates(this.site.siteId, 200)) {
      if ((await this.evictOne(candidate)) === true) excess -= candidate.size;
      if (excess <= 0) return true;
    }
    return false;
  }

  /**
   * Removes one cached copy: never one a rule wants here, never while this site has promised to keep
   * it, and only once another site with a good copy of the same bytes has promised to keep its own
   * (a lease; the row is removed within half of it, under the object's lock, only if it still holds
   * those bytes). True when removed, else why not.
   */
  private async evictOne(copy: EvictionCandidate): Promise<true | Kept> {
    const me = this.site.siteId;
    const claim = this.mover.mover.claimRemoval(copy.objectId);
    if (!claim) return 'this site is keeping it for another site now';
    try {
      const rules = await this.moverRepo.rulesCovering(copy.objectId);
      if (
        rules.length &&
        wantedSites(BigInt(copy.objectId), rules, await this.moverRepo.sites()).includes(me)
      )
        return 'a placement rule wants it here';
      const askedAt = Date.now();
      let promised = false;
      for (const site of this.availability.order(copy.goodAt.filter((s) => s !== me))) {
        if (!this.replication.peers.peer(site)) continue;
        const answer = await this.replication.peers
          .request<{ keep?: unknown }>(
            site,
            'POST',
            `${PEER_PLACEMENT_PATH}/keep`,
            { objectId: copy.objectId, checksum: copy.checksum, purpose: 'evict' },
            5000,
          )
          .catch(() => ({ keep: false }));
        if (answer.keep === true) {
          promised = true;
          break;
        }
      }
      if (!promised) return 'the only good copy this site could confirm';
      if (Date.now() - askedAt > this.mover.mover.leaseMs / 2) return 'the promise came too late';
      const key = await this.repo.evict(copy.replicaId, me, copy.checksum);
      if (key === null) return 'it changed meanwhile';
      if (key) await this.storage.remove(key).catch(() => undefined);
      this.evictions.inc();
      this.logger.log(`evicted the cached copy of ${copy.path} (${copy.size} bytes)`);
      return true;
    } finally {
      claim.release();
    }
  }

  /** One maintenance pass: reads noted, unusable cached copies dropped, the limit held. */
  private async pass(): Promise<void> {
    await this.flushTouches();
    for (const key of await this.repo.dropUnusable(this.site.siteId))
      await this.storage.remove(key).catch(() => undefined);
    await this.serially(() => this.makeRoom(0));
  }

  private schedulePass(delayMs: number): void {
    if (this.stopped) return;
    this.passTimer = setTimeout(() => {
      const run = this.pass()
        .catch((err: unknown) => this.logger.warn(`cache pass: ${String(err)}`))
        .finally(() => this.schedulePass(this.config.placement.intervalMs));
      this.track(run);
    }, delayMs);
  }

  private async flushTouches(): Promise<void> {
    if (!this.touched.size || !this.site.siteId) return;
    const ids = [...this.touched];
    this.touched.clear();
    await this.repo.touch(this.site.siteId, ids);
  }

  private async dropDrafts(): Promise<void> {
    for (const id of await this.storage.copies.list())
      if (id.startsWith(DRAFT_PREFIX)) await this.storage.copies.remove(id);
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.commits.then(work, work);
    this.commits = next.catch(() => undefined);
    return next;
  }

  private track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }

  // ---- the API ----

  /** This site's cache: limit, use and counts since start (administrators). */
  async status(p: Principal): Promise<CacheStatusDto> {
    this.access.assertAdmin(p);
    const usage = await this.repo.usage(this.site.siteId);
    const count = async (c: Counter): Promise<number> => (await c.get()).values[0]?.value ?? 0;
    return {
      site: this.site.siteId,
      enabled: this.enabled,
      limitBytes: this.limit,
      usedBytes: usage.bytes,
      pinnedBytes: usage.pinnedBytes,
      copies: usage.copies,
      hits: await count(this.hits),
      misses: await count(this.misses),
      bytesIn: await count(this.bytesIn),
      evictions: await count(this.evictions),
    };
  }

  /** The cached copies here below `path` (read access to it), most recently read first. */
  async list(p: Principal, path: string, limit: number): Promise<CacheListDto> {
    const scope = await this.scopeAt(p, path);
    const out = await this.repo.list(this.site.siteId, scope, limit);
    return {
      items: out.items.map((r) => ({ ...r, lastReadAt: r.lastReadAt?.toISOString() ?? null })),
      total: out.total,
      bytes: out.bytes,
    };
  }

  /**
   * Brings `path` (an object, or everything below a collection) into this site's cache in the
   * background (the mover fetches it), pinned with `pin`; refused when it cannot fit.
   */
  async stage(p: Principal, path: string, pin: boolean): Promise<StageStatusDto> {
    const scope = await this.scopeAt(p, path);
    this.assertEnabled();
    const [missing, usage] = await Promise.all([
      this.repo.missingBytes(this.site.siteId, scope),
      this.repo.usage(this.site.siteId),
    ]);
    const needed = missing + (pin ? usage.pinnedBytes : 0);
    if (needed > this.limit) {
      throw new DomainError(
        ErrorCode.CacheFull,
        `${path} needs ${missing} more bytes here` +
          (pin ? ` besides the ${usage.pinnedBytes} pinned already` : '') +
          `; this site's cache holds at most ${this.limit} (CACHE_MAX_BYTES)`,
      );
    }
    await this.repo.request(this.site.siteId, this.site.resourceId, scope, pin);
    return this.progress(path, scope);
  }

  /** How far staging `path` has come (read access to it). */
  async stageStatus(p: Principal, path: string): Promise<StageStatusDto> {
    return this.progress(path, await this.scopeAt(p, path));
  }

  async unpin(p: Principal, path: string): Promise<CacheChangeDto> {
    const scope = await this.scopeAt(p, path);
    return { changed: await this.repo.unpin(this.site.siteId, scope), kept: [] };
  }

  /** Evicts this site's cached copies below `path` now, each under the same guards as the limit's. */
  async evict(p: Principal, path: string): Promise<CacheChangeDto> {
    const scope = await this.scopeAt(p, path);
    let changed = 0;
    const kept: CacheChangeDto['kept'] = [];
    for (const copy of await this.repo.candidates(this.site.siteId, 1000, scope)) {
      const outcome = await this.serially(() => this.evictOne(copy));
      if (outcome === true) changed += 1;
      else kept.push({ path: copy.path, reason: outcome });
    }
    return { changed, kept };
  }

  private async progress(path: string, scope: CacheScope): Promise<StageStatusDto> {
    const counts = await this.repo.stageCounts(this.site.siteId, scope);
    return { path, site: this.site.siteId, ...counts, done: counts.readyObjects === counts.objects };
  }

  private assertEnabled(): void {
    if (!this.enabled)
      throw new DomainError(
        ErrorCode.CacheDisabled,
        `site ${this.site.siteId} keeps no cache (its CACHE_MAX_BYTES is 0); stage at a caching site`,
      );
  }

  /** What `path` names for the cache, when the caller may read it (refused as a download is). */
  private async scopeAt(p: Principal, path: string): Promise<CacheScope> {
    this.access.assertWithinToken(p, path);
    const entry = await this.namespace.resolve(path);
    await this.access.requireAt(p, path, entry && entryTarget(entry), 'read', () => notFound(path));
    if (!entry) throw notFound(path);
    return { kind: entry.kind, id: entry.id.toString() };
  }
}
