import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { ErrorCode, type ErasureScrubDto, type ObjectShardsDto } from '@tributary/shared';
import {
  encodeStripes,
  erasureLayout,
  homeSite,
  shardSize,
  shardTargets,
  type ErasureLayout,
  type PlacementSite,
  type ShardTarget,
} from '@tributary/placement';
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { PEER_PLACEMENT_PATH } from '../mover/copy-transfers';
import { MoverRepository } from '../mover/mover.repository';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { PeerAvailability } from '../sites/peer-availability';
import { SiteContext } from '../sites/site-context';
import type { StagedFile } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { ErasureRepository, type CoveredObject, type ErasureRule, type ShardRow } from './erasure.repository';
import { currentShardSet, PEER_ERASURE_PATH, READ_AHEAD_BYTES, ShardIO } from './shard-io';

/** What the pass found for one object: its rule, where each shard is wanted, and its rows. */
interface Plan {
  object: CoveredObject;
  rule: ErasureRule;
  targets: ShardTarget[];
}

/** Shards rebuilt at once at this site. */
const CONCURRENCY = 2;
/** Longest wait before a failed shard is tried again. */
const MAX_BACKOFF_MS = 60_000;

/**
 * The erasure mover and scrub of this site (docs/erasure.md). Each pass: for every live erasure
 * rule, the objects it covers and where their shards are wanted (shardTargets); each shard wanted
 * here that this site does not hold for the object's current bytes is made here — encoded from a
 * whole copy (this site's, or a peer's that encodes it and sends only that shard) or rebuilt from
 * any k good shards — staged, hashed and recorded under the object's lock only if the object is
 * still the bytes it was made from. Shards of older bytes that no rule wants here are dropped. A
 * whole copy here of an object only erasure rules cover goes once every wanted shard is good, its
 * checksum equal to what this site computes from its own copy, and every holder confirms it.
 */
@Injectable()
export class ErasureService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Erasure');
  private timer: NodeJS.Timeout | undefined;
  private scrubTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly retry = new Map<string, { at: number; attempts: number; error: string }>();
  private readonly aborts = new Set<AbortController>();

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly repo: ErasureRepository,
    private readonly copies: MoverRepository,
    private readonly io: ShardIO,
    private readonly storage: StorageService,
    private readonly site: SiteContext,
    private readonly replication: ReplicationService,
    private readonly availability: PeerAvailability,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.placement.enabled) return;
    const tick = (): void => {
      if (this.stopped) return;
      if (!this.site.siteId || !this.site.resourceId) {
        this.timer = setTimeout(tick, 200);
        return;
      }
      this.running = this.pass()
        .catch((err: unknown) => this.logger.warn(`erasure pass failed: ${String(err)}`))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.timer = setTimeout(tick, this.config.placement.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.config.placement.intervalMs);
    if (this.config.placement.scrubRateMiBs > 0) {
      const scrub = (): void => {
        if (this.stopped) return;
        void this.scrub(new Date(Date.now() - this.config.placement.scrubReverifyMs))
          .catch((err: unknown) => this.logger.warn(`shard scrub failed: ${String(err)}`))
          .finally(() => {
            if (!this.stopped) this.scrubTimer = setTimeout(scrub, this.config.placement.scrubIntervalMs);
          });
      };
      this.scrubTimer = setTimeout(scrub, this.config.placement.scrubIntervalMs);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.scrubTimer);
    for (const a of this.aborts) a.abort(new Error('the site is stopping'));
    await this.running;
  }

  /** One pass (exposed for tests and the benchmark through the pass loop only). */
  async pass(): Promise<void> {
    const me = this.site.siteId;
    const rules = await this.repo.liveRules();
    const sites = await this.copies.sites();
    const resources = rules.some((r) => r.domain === 'resource') ? await this.repo.resources() : [];
    const plans = new Map<string, Plan>();
    for (const rule of rules) {
      for (const object of await this.repo.covered(rule)) {
        if (plans.has(object.id)) continue; // the first rule (by id) decides an object's layout
        const targets = shardTargets(BigInt(object.id), rule, sites, resources);
        if (targets) plans.set(object.id, { object, rule, targets });
      }
    }
    const ids = [...plans.keys()];
    const rows = new Map<string, ShardRow[]>();
    for (let at = 0; at < ids.length; at += 1000)
      for (const r of await this.repo.shardsOf(ids.slice(at, at + 1000)))
        rows.set(r.objectId, [...(rows.get(r.objectId) ?? []), r]);

    // Shards wanted here that this site does not hold good for the current bytes.
    const work: Array<() => Promise<void>> = [];
    for (const plan of plans.values()) {
      const mine = rows.get(plan.object.id) ?? [];
      const layout = erasureLayout(plan.rule.k, plan.rule.m, plan.object.size);
      for (const target of plan.targets) {
        if (target.site !== me) continue;
        const held = mine.find((r) => r.index === target.index && r.siteId === me);
        if (held && isCurrent(held, plan.object, layout)) continue;
        const key = `${plan.object.id}:${target.index}`;
        const retry = this.retry.get(key);
        if (retry && retry.at > Date.now()) continue;
        work.push(() => this.makeShard(plan, target, layout, mine, key));
      }
    }
    await runAll(work, CONCURRENCY, () => this.stopped);

    // Shards here of older bytes that no rule wants here: of no use to any read.
    for (const r of await this.repo.shardsHere(me)) {
      const plan = plans.get(r.objectId);
      const object = plan?.object ?? (await this.repo.object(r.objectId));
      if (!object || r.objectChecksum === object.checksum) continue;
      if (plan?.targets.some((t) => t.site === me && t.index === r.index)) continue; // rebuilt in place
      const key = await this.repo.dropStaleShard(me, r.id, r.objectChecksum);
      if (key) await this.removeFile(key);
    }

    // Whole copies here of objects only erasure rules cover, once their shard set is complete.
    const fresh = new Map<string, ShardRow[]>();
    for (let at = 0; at < ids.length; at += 1000)
      for (const r of await this.repo.shardsOf(ids.slice(at, at + 1000)))
        fresh.set(r.objectId, [...(fresh.get(r.objectId) ?? []), r]);
    for (const plan of plans.values()) {
      if (this.stopped) return;
      await this.trimWholeCopy(plan, fresh.get(plan.object.id) ?? [], sites).catch((err: unknown) =>
        this.logger.warn(`object ${plan.object.id}: whole copy kept: ${String(err)}`),
      );
    }

    // Objects with shards that no erasure rule covers now (the rule was removed, expired, or its
    // condition no longer holds): a whole copy first, made from the shards at the object's home
    // site, then each site drops its shards once a site holding a good whole copy confirms it.
    for (const id of await this.repo.shardedObjects()) {
      if (this.stopped || plans.has(id)) continue;
      await this.unwind(id, sites).catch((err: unknown) =>
        this.logger.warn(`object ${id}: shards kept: ${String(err)}`),
      );
    }
    // This site's whole-copy rows waiting for bytes that no whole copy anywhere can give (a rule
    // of copies over an object kept only as shards): made from the shards.
    for (const id of await this.repo.waitingCopiesHere(me)) {
      if (this.stopped) return;
      const object = await this.repo.object(id);
      if (!object || (await this.wholeCopiesElsewhere(object)).length > 0) continue;
      await this.wholeCopyFromShards(object).catch((err: unknown) =>
        this.logger.warn(`object ${id}: no whole copy made from the shards: ${String(err)}`),
      );
    }
  }

  /** An object with shards and no erasure rule: see `pass`. */
  private async unwind(id: string, sites: PlacementSite[]): Promise<void> {
    const me = this.site.siteId;
    const object = await this.repo.object(id);
    if (!object) return;
    // Covered by an erasure rule that cannot be placed now (sites gone from the catalog): left as is.
    if ((await this.repo.rulesCovering(id)).length > 0) return;
    const rows = await this.repo.shardsOf([id]);
    const whole = (await this.copies.copiesOf(id)).filter(
      (r) => r.status === 'good' && r.checksum === object.checksum,
    );
    if (whole.length === 0) {
      const holders = [
        ...new Set(rows.filter((r) => r.objectChecksum === object.checksum).map((r) => r.siteId)),
      ].sort();
      const home = homeSite(BigInt(id), sites);
      const rescuer = home !== undefined && sites.some((s) => s.id === home) ? home : holders[0];
      if (rescuer === me) await this.wholeCopyFromShards(object);
      return;
    }
    if (!rows.some((r) => r.siteId === me)) return;
    // A site holding a good whole copy of these bytes confirms it (and keeps it for the lease).
    for (const holder of whole.map((r) => r.siteId)) {
      const yes =
        holder === me
          ? (await this.copies.goodCurrentCopy(id, me)) !== null
          : await this.replication.peers
              .request<{ keep?: unknown }>(
                holder,
                'POST',
                `${PEER_PLACEMENT_PATH}/keep`,
                { objectId: id, checksum: object.checksum, purpose: 'evict' },
                10_000,
              )
              .then((a) => a.keep === true)
              .catch(() => false);
      if (!yes) continue;
      for (const key of await this.repo.dropShardsOf(me, id, object.checksum)) await this.removeFile(key);
      this.logger.log(
        `object ${id}: no erasure rule covers it; shards here dropped (whole copy at ${holder})`,
      );
      return;
    }
  }

  /** A whole copy here decoded from any k shards (SHA-256 checked against the object's). */
  private async wholeCopyFromShards(object: CoveredObject): Promise<void> {
    const me = this.site.siteId;
    const set = currentShardSet(object, await this.repo.shardsOf([object.id]));
    if (!set) throw new Error('fewer than k good shards are known');
    const bytes = checkedBytes(this.io.decode(set, 0, object.size), object.checksum);
    const staged = await this.storage.stage(Readable.from(bytes), {
      maxBytes: object.size,
      expectedBytes: object.size,
    });
    try {
      if (staged.size !== object.size || staged.sha256 !== object.checksum.replace(/^sha256:/, ''))
        throw new Error(`the rebuilt bytes hash to ${staged.sha256}, not ${object.checksum}`);
      const key = staged.key ?? randomUUID();
      const previous = await this.repo.commitWholeCopy(
        me,
        this.site.resourceId.toString(),
        { objectId: object.id, key, size: object.size, checksum: object.checksum },
        () => staged.commit(key),
      );
      if (previous === null) throw new Error('the object changed while it was rebuilt');
      if (previous !== '' && previous !== key) await this.removeFile(previous);
      this.logger.log(`object ${object.id}: whole copy made here from its shards`);
    } catch (err) {
      await staged.discard().catch(() => undefined);
      throw err;
    }
  }

  /** Makes shard `target.index` here for the object's current bytes. */
  private async makeShard(
    plan: Plan,
    target: ShardTarget,
    layout: ErasureLayout,
    rows: readonly ShardRow[],
    retryKey: string,
  ): Promise<void> {
    const me = this.site.siteId;
    const { object } = plan;
    const expected = shardSize(layout);
    const abort = new AbortController();
    this.aborts.add(abort);
    let staged: StagedFile | undefined;
    try {
      const body = await this.shardSource(object, layout, target.index, rows, abort.signal);
      const resourceId = target.resourceId ?? this.site.resourceId.toString();
      const limits = { maxBytes: expected, expectedBytes: expected };
      staged =
        target.resourceId === null
          ? await this.storage.stage(Readable.from(body), limits)
          : await this.storage.stageIn(BigInt(target.resourceId), Readable.from(body), limits);
      if (staged.size !== expected)
        throw new Error(`the shard has ${staged.size} bytes, ${expected} expected`);
      const file = staged;
      const key = file.key ?? randomUUID();
      const previous = await this.repo.commitShard(
        me,
        {
          objectId: object.id,
          index: target.index,
          resourceId,
          key,
          k: layout.k,
          m: layout.m,
          chunk: layout.chunk,
          objectSize: object.size,
          objectChecksum: object.checksum,
          size: file.size,
          checksum: file.sha256,
        },
        () => file.commit(key),
      );
      if (previous === null) {
        await file.discard();
        throw new Error('the object changed while its shard was made');
      }
      this.retry.delete(retryKey);
      if (previous !== '' && previous !== key) await this.removeFile(previous);
      this.logger.log(`object ${object.id}: shard ${target.index} of ${layout.k}+${layout.m} made here`);
    } catch (err) {
      await staged?.discard().catch(() => undefined);
      const attempts = (this.retry.get(retryKey)?.attempts ?? 0) + 1;
      const error = err instanceof Error ? err.message : String(err);
      this.retry.set(retryKey, {
        at: Date.now() + Math.min(MAX_BACKOFF_MS, 500 * 2 ** (attempts - 1)),
        attempts,
        error,
      });
      if (!this.stopped) this.logger.warn(`object ${object.id}: shard ${target.index} not made: ${error}`);
    } finally {
      this.aborts.delete(abort);
    }
  }

  /**
   * The bytes of shard `index` of the object's current version: encoded from this site's whole copy,
   * else from a peer's whole copy (the peer encodes, only the shard travels), else rebuilt from any
   * k good shards (the whole object decoded, its SHA-256 checked against the catalog's on the way).
   */
  private async shardSource(
    object: CoveredObject,
    layout: ErasureLayout,
    index: number,
    rows: readonly ShardRow[],
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const me = this.site.siteId;
    const local = await this.copies.goodCurrentCopy(object.id, me);
    if (local) return this.io.shardOfCopy(layout, local.key, index);
    const why: string[] = [];
    for (const site of this.availability.order(await this.wholeCopiesElsewhere(object))) {
      try {
        return await this.encodedAt(site, object, layout, index, signal);
      } catch (err) {
        why.push(err instanceof Error ? err.message : String(err));
      }
    }
    const set = currentShardSet(
      object,
      rows.filter((r) => !(r.siteId === me && r.index === index)),
    );
    if (!set)
      throw new Error(
        `no whole copy answered (${why.join('; ') || 'none'}) and fewer than ${layout.k} good shards are known`,
      );
    const decoded = checkedBytes(this.io.decode(set, 0, object.size), object.checksum);
    return this.io.encodeShard(set.layout, decoded, index);
  }

  private async wholeCopiesElsewhere(object: CoveredObject): Promise<string[]> {
    const rows = await this.copies.copiesOf(object.id);
    return rows
      .filter((r) => r.siteId !== this.site.siteId && r.status === 'good' && r.checksum === object.checksum)
      .map((r) => r.siteId)
      .filter((s) => this.replication.peers.peer(s));
  }

  /** Shard `index` encoded by a peer from its whole copy (PeerErasureController.encode). */
  private async encodedAt(
    site: string,
    object: CoveredObject,
    layout: ErasureLayout,
    index: number,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array>> {
    const timeoutMs = this.config.peerReads.connectTimeoutMs;
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => controller.abort(new Error(`${site}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const query = new URLSearchParams({
      index: String(index),
      k: String(layout.k),
      m: String(layout.m),
      chunk: String(layout.chunk),
      checksum: object.checksum,
    });
    let res: Response;
    try {
      res = await this.replication.peers.stream(
        site,
        `${PEER_ERASURE_PATH}/encode/${object.id}?${query.toString()}`,
        {},
        controller.signal,
      );
    } catch (err) {
      this.availability.markDown(site);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.availability.markUp(site);
    if (res.status !== 200 || !res.body || res.headers.get('etag') !== `"${object.checksum}"`) {
      controller.abort(new Error('not the bytes asked for'));
      throw new Error(`${site} answered ${res.status}`);
    }
    // A deep buffer: the peer keeps sending while this site decodes and sends the stripe before.
    return Readable.fromWeb(res.body as WebReadableStream<Uint8Array>, { highWaterMark: READ_AHEAD_BYTES });
  }

  /**
   * Drops this site's whole copy of an object that only erasure rules cover once its shard set is
   * complete: every wanted shard good for the current bytes in this site's view, each shard's
   * checksum equal to the one this site computes by encoding its own copy, and every holder
   * confirming its shard now. The copy row goes under the object's lock, only while its checksum is
   * the one verified (MoverRepository.removeCopy); the file goes with the storage garbage.
   */
  private async trimWholeCopy(plan: Plan, rows: readonly ShardRow[], sites: PlacementSite[]): Promise<void> {
    const me = this.site.siteId;
    const { object, targets } = plan;
    const copy = (await this.copies.copiesHere(me, [object.id]))[0];
    if (!copy || copy.status !== 'good' || !copy.current) return;
    // Copy rules (subscriptions too) decide on whole copies of the objects they cover.
    if ((await this.copies.rulesCovering(object.id)).length > 0) return;
    const layout = erasureLayout(plan.rule.k, plan.rule.m, object.size);
    const held = targets.map((t) =>
      rows.find((r) => r.index === t.index && r.siteId === t.site && isCurrent(r, object, layout)),
    );
    if (held.some((r) => r === undefined)) return;
    const local = await this.copies.goodCurrentCopy(object.id, me);
    if (!local) return;
    const expected = await this.shardChecksums(layout, local.key);
    for (const r of held) {
      if (r!.checksum !== expected[r!.index])
        throw new Error(`shard ${r!.index} at ${r!.siteId} is not the encoding of this site's copy`);
    }
    for (const r of held) if (!(await this.confirms(r!))) return;
    const key = await this.copies.removeCopy(copy.replicaId, me, { good: true, checksum: object.checksum });
    if (key) {
      await this.removeFile(key);
      this.logger.log(
        `object ${object.id}: whole copy dropped here; kept as ${layout.k}+${layout.m} shards at ${targets
          .map((t) => t.site)
          .join(', ')} (${sites.length} sites)`,
      );
    }
  }

  /** The SHA-256 of each shard of this site's whole copy at `key`, as encoded now. */
  private async shardChecksums(layout: ErasureLayout, key: string): Promise<string[]> {
    const hashes = Array.from({ length: layout.k + layout.m }, () => createHash('sha256'));
    for await (const stripe of encodeStripes(layout, this.io.local(key)))
      stripe.shards.forEach((s, i) => hashes[i]!.update(s));
    return hashes.map((h) => h.digest('hex'));
  }

  /** Whether the holder of a shard confirms it holds it good, for these bytes, now. */
  private async confirms(row: ShardRow): Promise<boolean> {
    const request = {
      objectId: row.objectId,
      index: row.index,
      objectChecksum: row.objectChecksum,
      checksum: row.checksum,
    };
    if (row.siteId === this.site.siteId) return this.keep(request);
    try {
      const answer = await this.replication.peers.request<{ keep?: unknown }>(
        row.siteId,
        'POST',
        `${PEER_ERASURE_PATH}/keep`,
        request,
        10_000,
      );
      return answer.keep === true;
    } catch {
      return false;
    }
  }

  /** A peer's question (or this site's own): does this site hold this shard good for these bytes? */
  async keep(q: {
    objectId: string;
    index: number;
    objectChecksum: string;
    checksum: string;
  }): Promise<boolean> {
    const object = await this.repo.object(q.objectId);
    if (!object || object.checksum !== q.objectChecksum) return false;
    const row = (await this.repo.shardsOf([q.objectId])).find(
      (r) => r.siteId === this.site.siteId && r.index === q.index,
    );
    return (
      !!row && row.status === 'good' && row.objectChecksum === q.objectChecksum && row.checksum === q.checksum
    );
  }

  /** For a peer: this site's good shard of these bytes (key and size), or null. */
  async localShard(objectId: string, index: number, objectChecksum: string): Promise<ShardRow | null> {
    const row = (await this.repo.shardsOf([objectId])).find(
      (r) => r.siteId === this.site.siteId && r.index === index,
    );
    return row && row.status === 'good' && row.objectChecksum === objectChecksum ? row : null;
  }

  /**
   * Re-hashes this site's good shards not verified since `before`: equal, `verified_at` now; missing
   * or different, `suspect` (the mover rebuilds it from any k others). Administrators may run it now.
   */
  async scrub(before: Date, limit = 1000): Promise<ErasureScrubDto> {
    const me = this.site.siteId;
    let checked = 0;
    let suspect = 0;
    for (const row of await this.repo.toVerify(me, before, limit)) {
      if (this.stopped) break;
      let outcome: { ok: true } | { ok: false; error: string };
      try {
        const hash = createHash('sha256');
        let size = 0;
        for await (const piece of this.io.shardFile(row) as AsyncIterable<Buffer>) {
          hash.update(piece);
          size += piece.length;
        }
        const found = hash.digest('hex');
        outcome =
          found === row.checksum && size === row.size
            ? { ok: true }
            : { ok: false, error: `SHA-256 differs: found ${found} expected ${row.checksum}` };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && !/not found|no such/i.test(String(err))) {
          this.logger.warn(`shard ${row.id}: could not be read (${String(err)}); checked again later`);
          continue;
        }
        outcome = { ok: false, error: 'file missing' };
      }
      checked += 1;
      if (await this.repo.recordCheck(me, row, outcome)) {
        if (!outcome.ok) {
          suspect += 1;
          this.logger.warn(
            `shard ${row.index} of object ${row.objectId} (key ${row.key}) is suspect: ${outcome.error}`,
          );
        }
      }
    }
    return { site: me, checked, suspect };
  }

  /** `POST /placement/erasure/scrub` (administrators): every good shard here re-hashed now. */
  async scrubNow(principal: Principal): Promise<ErasureScrubDto> {
    this.access.assertAdmin(principal);
    return this.scrub(new Date(Date.now() + 1000), 100_000);
  }

  /** An object's erasure layout: k, m, where each shard is wanted and where each is (read access). */
  async shards(principal: Principal, path: string): Promise<ObjectShardsDto> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.namespace.resolve(path);
    await this.access.requireAt(principal, path, entry && entryTarget(entry), 'read', () => notFound(path));
    if (!entry || entry.kind !== 'object')
      throw new DomainError(ErrorCode.NotAnObject, `${path} is a collection; its objects have shards`);
    const id = entry.id.toString();
    const object = { id, size: Number(entry.size), checksum: entry.checksum };
    const rows = await this.repo.shardsOf([id]);
    const rule = entry.linkTarget === null ? (await this.repo.rulesCovering(id))[0] : undefined;
    const targets = rule
      ? (shardTargets(
          entry.id,
          rule,
          await this.copies.sites(),
          rule.domain === 'resource' ? await this.repo.resources() : [],
        ) ?? [])
      : [];
    if (!rule && rows.length === 0)
      return { path, size: object.size, checksum: object.checksum, erasure: null };
    const first = rows.find((r) => r.objectChecksum === object.checksum) ?? rows[0];
    const layout = rule
      ? erasureLayout(rule.k, rule.m, object.size)
      : { k: first!.k, m: first!.m, chunk: first!.chunk, size: object.size };
    const current = (r: ShardRow): boolean => isCurrent(r, object, layout);
    return {
      path,
      size: object.size,
      checksum: object.checksum,
      erasure: {
        k: layout.k,
        m: layout.m,
        chunk: layout.chunk,
        domain: rule?.domain ?? 'site',
        wantedSites: targets.map((t) => t.site),
        goodShards: new Set(rows.filter(current).map((r) => r.index)).size,
        shards: rows.map((r) => ({
          index: r.index,
          site: r.siteId,
          state: r.objectChecksum !== object.checksum ? 'stale' : r.status,
          current: current(r),
          size: r.size,
          checksum: r.checksum,
          verifiedAt: r.verifiedAt?.toISOString() ?? null,
          error: r.error,
          wanted: targets.some((t) => t.index === r.index && t.site === r.siteId),
        })),
      },
    };
  }

  private async removeFile(key: string): Promise<void> {
    // The storage garbage sweep takes it otherwise (its row is gone or names another key).
    await this.storage.remove(key).catch(() => undefined);
  }
}

/** A shard row that serves the object's current bytes in this layout. */
function isCurrent(r: ShardRow, object: CoveredObject, layout: ErasureLayout): boolean {
  return (
    r.status === 'good' &&
    r.objectChecksum === object.checksum &&
    r.objectSize === object.size &&
    r.k === layout.k &&
    r.m === layout.m &&
    r.chunk === layout.chunk
  );
}

/** Passes the bytes on, and fails at the end unless their SHA-256 is `checksum`. */
async function* checkedBytes(bytes: AsyncIterable<Uint8Array>, checksum: string): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  for await (const piece of bytes) {
    hash.update(piece);
    yield piece;
  }
  const found = hash.digest('hex');
  if (found !== checksum.replace(/^sha256:/, ''))
    throw new Error(`the bytes rebuilt from the shards hash to ${found}, not ${checksum}`);
}

/** Runs the tasks, `concurrency` at a time, until done or `stop()`. */
async function runAll(
  tasks: Array<() => Promise<void>>,
  concurrency: number,
  stop: () => boolean,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length && !stop()) await tasks[next++]!();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
}
