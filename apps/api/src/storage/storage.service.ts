import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import { Readable, type Writable } from 'node:stream';
import { DomainError } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SiteContext } from '../sites/site-context';
import { CompoundStateRepository } from './compound-state.repository';
import { CompoundDriver, type CompoundState, type StagingProgress } from './compound.driver';
import { LocalFsDriver } from './local-fs.driver';
import { compoundOf, type ResourceSpec } from './resource-config';
import { S3Driver } from './s3.driver';
import {
  ForwardingDrafts,
  StorageUnavailableError,
  type DraftStore,
  type ResourceHealth,
  type StagedFile,
  type StorageDriver,
} from './storage-driver';
import { StorageResourcesRepository } from './storage-resources.repository';

/** Keys whose resource is remembered (a site with several resources). */
const KEY_CACHE_LIMIT = 50_000;

/** One of this site's storage resources, as the service holds it. */
export interface StorageResource {
  name: string;
  kind: ResourceSpec['kind'];
  isDefault: boolean;
  /** The compound resource this one is the cache or archive of (reached only through it). */
  partOf?: string;
  driver: StorageDriver;
  /** Whether `init` has succeeded (a store that was down at start is initialised when it answers). */
  ready: boolean;
  health: ResourceHealth;
  checkedAt?: Date;
  /** When the current failure was first seen. */
  failingSince?: Date;
}

/** What /api/health and the resources listing show of a resource. */
export interface ResourceStatus {
  name: string;
  kind: ResourceSpec['kind'];
  default: boolean;
  status: ResourceHealth['status'];
  error?: string;
  checkedAt?: Date;
}

/**
 * This site's storage resources: every read and write of object bytes and upload drafts goes
 * through here (docs/storage.md). New bytes go to the default resource (STORAGE_DEFAULT_RESOURCE);
 * a key is read from the resource whose copy row names it (looked up once, then remembered: keys
 * are never reused). Each resource is checked every `STORAGE_CHECK_SECONDS` and whenever a request
 * finds its store failing; a failing store's requests answer 503 STORAGE_UNAVAILABLE naming it.
 */
@Injectable()
export class StorageService implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Storage');
  private readonly resources = new Map<string, StorageResource>();
  private readonly primary: StorageResource;
  private readonly keyResource = new Map<string, string>();
  private readonly checkIntervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    @Inject(SITE_CONFIG) config: SiteConfig,
    private readonly site: SiteContext,
    private readonly repo: StorageResourcesRepository,
    compoundState: CompoundStateRepository,
  ) {
    const specs = config.storage.resources;
    // Compound resources last: they are built on their parts' drivers.
    for (const spec of [
      ...specs.filter((s) => s.kind !== 'compound'),
      ...specs.filter((s) => s.kind === 'compound'),
    ]) {
      const driver =
        spec.kind === 'local'
          ? new LocalFsDriver(spec.root)
          : spec.kind === 's3'
            ? new S3Driver(spec.name, spec.settings, spec.credentials, config.storageRoot)
            : new CompoundDriver(
                spec.name,
                this.resources.get(spec.cache)!.driver,
                this.resources.get(spec.archive)!.driver,
                { cache: spec.cache, archive: spec.archive },
                spec.cacheMaxBytes,
                compoundState.forResource(spec.name),
                (message) => this.logger.log(message),
                config.storage.compoundPassMs,
              );
      const partOf = compoundOf(specs, spec.name);
      this.resources.set(spec.name, {
        name: spec.name,
        kind: spec.kind,
        isDefault: spec.name === config.storage.defaultResource,
        ...(partOf !== undefined ? { partOf } : {}),
        driver,
        ready: false,
        health: { status: 'ok' },
      });
    }
    this.primary = this.resources.get(config.storage.defaultResource)!;
    this.checkIntervalMs = config.storage.checkIntervalMs;
  }

  async onModuleInit(): Promise<void> {
    for (const resource of this.resources.values()) {
      try {
        await resource.driver.init();
        resource.ready = true;
      } catch (err) {
        // A local directory that cannot be made is a broken installation; a store that does not
        // answer yet is checked again until it does (the site serves everything else meanwhile).
        if (resource.kind === 'local') throw err;
        resource.health = { status: 'failing', error: reasonOf(err) };
        resource.failingSince = new Date();
        this.logger.warn(`storage resource ${resource.name} is not available: ${reasonOf(err)}`);
      }
    }
  }

  onApplicationBootstrap(): void {
    if (this.checkIntervalMs <= 0) return;
    this.timer = setInterval(() => void this.checkAll(), this.checkIntervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.checking?.catch(() => undefined);
    // Compound resources first (their passes use their parts' drivers), in reverse of creation.
    for (const r of [...this.resources.values()].reverse()) await r.driver.close().catch(() => undefined);
  }

  /** The resource new bytes go to. */
  get defaultResource(): StorageResource {
    return this.primary;
  }

  /** Upload sessions' bytes, built piece by piece before they become objects (default resource). */
  get drafts(): DraftStore {
    return this.guardDrafts(this.primary, this.primary.driver.drafts);
  }

  /** Copies arriving from other sites (the mover's partial files), kept across restarts. */
  get copies(): DraftStore {
    return this.guardDrafts(this.primary, this.primary.driver.copies);
  }

  async stage(source: Readable, limits: { maxBytes: number; expectedBytes?: number }): Promise<StagedFile> {
    const r = this.primary;
    return guardStaged(await this.guard(r, () => r.driver.stage(source, limits)), (op) => this.guard(r, op));
  }

  /** Small bodies in memory, staged and made durable together (see StorageDriver.stageAll). */
  async stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]> {
    const r = this.primary;
    const staged = await this.guard(r, () => r.driver.stageAll(bodies));
    return staged.map((s) => guardStaged(s, (op) => this.guard(r, op)));
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    const resource = this.knownResourceOf(key);
    if (resource?.kind === 'local') return resource.driver.open(key, range);
    return Readable.from(this.bytesOf(key, range), { objectMode: false });
  }

  private async *bytesOf(key: string, range?: { start: number; end: number }): AsyncGenerator<Buffer> {
    const r = await this.resourceOf(key);
    try {
      for await (const piece of r.driver.open(key, range)) yield piece as Buffer;
    } catch (err) {
      throw this.translate(r, err);
    }
  }

  /** A small object's bytes at once (see StorageDriver.readSmall). */
  async readSmall(key: string, maxBytes: number): Promise<Buffer> {
    const r = await this.resourceOf(key);
    return this.guard(r, () => r.driver.readSmall(key, maxBytes));
  }

  async send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    const r = await this.resourceOf(key);
    return this.guard(r, () => r.driver.send(key, range, out));
  }

  /**
   * Opens the bytes for sending: resolves once the resource has answered (an object store's GET
   * has its headers), so a failing store is a 503 before any answer is sent; `sendTo` then streams.
   */
  async prepareSend(
    key: string,
    range: { start: number; end: number } | undefined,
  ): Promise<{ sendTo(out: Writable): Promise<number> }> {
    const r = await this.resourceOf(key);
    const driver = r.driver;
    if (!(driver instanceof S3Driver)) return { sendTo: (out) => driver.send(key, range, out) };
    const prepared = await this.guard(r, () => driver.prepareSend(key, range));
    return { sendTo: (out) => this.guard(r, () => prepared.sendTo(out)) };
  }

  async remove(key: string): Promise<void> {
    const r = await this.resourceOf(key);
    await this.guard(r, () => r.driver.remove(key));
    this.keyResource.delete(key);
  }

  /** Removes `key` from the resource with catalog id `resourceId` (the garbage sweep's). */
  async removeFrom(resourceId: bigint, key: string): Promise<void> {
    const r = this.byId(resourceId);
    if (!r)
      throw new StorageUnavailableError(`#${resourceId}`, 'the resource is not configured at this site');
    await this.guard(r, () => r.driver.remove(key));
    this.keyResource.delete(key);
  }

  /** The resource with catalog id `id` when it is configured here (moves check their target). */
  resourceById(id: bigint): StorageResource | undefined {
    return this.byId(id);
  }

  /** Reads `key` from the resource with catalog id `resourceId` (a move's source). */
  openIn(resourceId: bigint, key: string): Readable {
    const r = this.byId(resourceId);
    if (!r)
      throw new StorageUnavailableError(`#${resourceId}`, 'the resource is not configured at this site');
    if (r.kind === 'local') return r.driver.open(key);
    return Readable.from(this.bytesIn(r, key), { objectMode: false });
  }

  private async *bytesIn(r: StorageResource, key: string): AsyncGenerator<Buffer> {
    try {
      for await (const piece of r.driver.open(key)) yield piece as Buffer;
    } catch (err) {
      throw this.translate(r, err);
    }
  }

  /** Streams `source` into staging on the resource with catalog id `resourceId` (a move's target). */
  async stageIn(
    resourceId: bigint,
    source: Readable,
    limits: { maxBytes: number; expectedBytes?: number; key?: string },
  ): Promise<StagedFile> {
    const r = this.byId(resourceId);
    if (!r)
      throw new StorageUnavailableError(`#${resourceId}`, 'the resource is not configured at this site');
    return guardStaged(await this.guard(r, () => r.driver.stage(source, limits)), (op) => this.guard(r, op));
  }

  /**
   * For a read that will not wait long: null when `key`'s bytes can be sent now; else (a key of a
   * compound resource held only in its archive) the staging into the cache, started if it was not,
   * with its progress after waiting up to `waitMs` for it (null if it finished).
   */
  async readiness(key: string, waitMs: number): Promise<StagingProgress | null> {
    const r = await this.resourceOf(key);
    if (!(r.driver instanceof CompoundDriver)) return null;
    const driver = r.driver;
    return this.guard(r, () => driver.readiness(key, waitMs));
  }

  /**
   * The tiers of copies on this site's compound resources (resource name and key each), for the
   * copies view; copies on other resources are left out.
   */
  async tiers(
    copies: ReadonlyArray<{ resource: string; key: string }>,
  ): Promise<Map<string, CompoundState & { staging?: StagingProgress }>> {
    const out = new Map<string, CompoundState & { staging?: StagingProgress }>();
    const byResource = new Map<CompoundDriver, string[]>();
    for (const c of copies) {
      const driver = this.resources.get(c.resource)?.driver;
      if (driver instanceof CompoundDriver)
        byResource.set(driver, [...(byResource.get(driver) ?? []), c.key]);
    }
    for (const [driver, keys] of byResource)
      for (const [key, state] of await driver.states(keys)) out.set(key, state);
    return out;
  }

  /** The compound resource that the resource `name` is the cache or archive of, if any. */
  partOf(name: string): string | undefined {
    return this.resources.get(name)?.partOf;
  }

  /** The compound resource named `name`, if it is one here (tests and status). */
  compound(name: string): CompoundDriver | undefined {
    const driver = this.resources.get(name)?.driver;
    return driver instanceof CompoundDriver ? driver : undefined;
  }

  /** Forgets where `key` was (its copy row now names another resource). */
  forget(key: string): void {
    this.keyResource.delete(key);
  }

  /** The catalog ids of this site's configured resources (empty before the bootstrap). */
  resourceIds(): bigint[] {
    return [...this.site.resources.values()];
  }

  /** Every resource's last known health, the default first. */
  statuses(): ResourceStatus[] {
    return [...this.resources.values()]
      .sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.name.localeCompare(b.name))
      .map((r) => ({
        name: r.name,
        kind: r.kind,
        default: r.isDefault,
        status: r.health.status,
        ...(r.health.error ? { error: r.health.error } : {}),
        ...(r.checkedAt ? { checkedAt: r.checkedAt } : {}),
      }));
  }

  /** Checks every resource now (and initialises those that were down at start). */
  checkAll(): Promise<void> {
    this.checking ??= (async () => {
      for (const r of this.resources.values()) await this.checkOne(r);
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOne(r: StorageResource): Promise<void> {
    let health: ResourceHealth;
    if (!r.ready) {
      try {
        await r.driver.init();
        r.ready = true;
        health = { status: 'ok' };
      } catch (err) {
        health = { status: 'failing', error: reasonOf(err) };
      }
    } else {
      health = await r.driver
        .check()
        .catch((err: unknown) => ({ status: 'failing' as const, error: reasonOf(err) }));
    }
    await this.setHealth(r, health);
  }

  private async setHealth(r: StorageResource, health: ResourceHealth): Promise<void> {
    const changed = r.health.status !== health.status || r.health.error !== health.error;
    if (changed) {
      if (health.status === 'failing') {
        this.logger.warn(`storage resource ${r.name} is failing: ${health.error}`);
        r.failingSince ??= new Date();
      } else {
        this.logger.log(`storage resource ${r.name} answers again`);
        // Multipart uploads the failure broke off are aborted (their parts would stay otherwise).
        const since = r.failingSince;
        r.failingSince = undefined;
        if (since && r.driver instanceof S3Driver)
          void r.driver.abortUnfinished(since).catch(() => undefined);
      }
    }
    r.health = health;
    r.checkedAt = new Date();
    const id = this.site.resources.get(r.name);
    if (id !== undefined)
      await this.repo.recordHealth(id, health.status, health.error ?? null).catch(() => undefined);
  }

  /** Runs a request on a resource; a failing store becomes 503 STORAGE_UNAVAILABLE and is marked. */
  private async guard<T>(r: StorageResource, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw this.translate(r, err);
    }
  }

  private translate(r: StorageResource, err: unknown): unknown {
    if (!(err instanceof StorageUnavailableError)) return err;
    if (r.health.status === 'ok') void this.setHealth(r, { status: 'failing', error: err.reason });
    return storageUnavailable(err, Math.max(1, Math.ceil(this.checkIntervalMs / 1000)));
  }

  private guardDrafts(r: StorageResource, store: DraftStore): DraftStore {
    if (r.kind === 'local') return store;
    return new GuardedDrafts(store, (op) => this.guard(r, op));
  }

  private byId(id: bigint): StorageResource | undefined {
    for (const [name, rid] of this.site.resources) if (rid === id) return this.resources.get(name);
    return undefined;
  }

  /** The resource of a key when it needs no lookup. */
  private knownResourceOf(key: string): StorageResource | undefined {
    if (this.resources.size === 1) return this.primary;
    const name = this.keyResource.get(key);
    return name === undefined ? undefined : this.resources.get(name);
  }

  /**
   * The resource holding `key`: the one its copy row names; the default when no row names it (bytes
   * staged there and not yet recorded).
   */
  private async resourceOf(key: string): Promise<StorageResource> {
    const known = this.knownResourceOf(key);
    if (known) return known;
    const id = await this.repo.locate(this.site.siteId, key);
    if (id === null) return this.primary;
    const r = this.byId(id);
    if (!r)
      throw storageUnavailable(
        new StorageUnavailableError(
          `#${id}`,
          'the resource holding these bytes is not configured at this site',
        ),
        60,
      );
    if (this.keyResource.size >= KEY_CACHE_LIMIT)
      this.keyResource.delete(this.keyResource.keys().next().value!);
    this.keyResource.set(key, r.name);
    return r;
  }
}

function reasonOf(err: unknown): string {
  if (err instanceof StorageUnavailableError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}

/** 503 STORAGE_UNAVAILABLE, naming the resource. */
export function storageUnavailable(err: StorageUnavailableError, retryAfterSeconds: number): DomainError {
  return new DomainError(
    ErrorCode.StorageUnavailable,
    `storage resource "${err.resource}" is unavailable (${err.reason}); nothing was changed, try again later`,
    undefined,
    { 'retry-after': String(retryAfterSeconds) },
  );
}

/** A DraftStore whose failures of the store become 503 STORAGE_UNAVAILABLE. */
class GuardedDrafts extends ForwardingDrafts {
  constructor(
    store: DraftStore,
    private readonly guard: <T>(op: () => Promise<T>) => Promise<T>,
  ) {
    super(store);
  }

  async adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    return guardStaged(await this.guard(() => this.inner.adopt(id, measured)), this.guard);
  }
}

/** A StagedFile whose commit's failures of the store become 503 STORAGE_UNAVAILABLE. */
function guardStaged(staged: StagedFile, guard: <T>(op: () => Promise<T>) => Promise<T>): StagedFile {
  if (staged.key === undefined) return staged;
  return {
    size: staged.size,
    sha256: staged.sha256,
    key: staged.key,
    open: () => staged.open(),
    commit: (key) => guard(() => staged.commit(key)),
    discard: () => staged.discard(),
  };
}
