import { Injectable } from '@nestjs/common';
import { ErrorCode, splitPath } from '@tributary/shared';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { MetricsRegistry } from '../health/metrics';
import { NamespaceRepository, type ObjectRecord } from '../namespace/namespace.repository';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import { DataRepository } from './data.repository';
import { baseChanged, isASymlink, noPeerLinkToHolder } from './data.errors';
import { baseAcceptable, holdingSite } from './holding-site';

/** Most objects, and most bytes together, one batch read may return. */
export const MAX_BATCH_READ_OBJECTS = 1000;
export const MAX_BATCH_READ_BYTES = 256 * 1024 * 1024;

/** Where an object's bytes are read from: a key in this site's storage, or a peer site. */
export type ByteSource =
  { kind: 'local'; key: string } | { kind: 'remote'; siteId: string; objectId: bigint };

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
  ) {}
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
    return { object: entry, source: this.sourceOf(path, entry) };
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
    if (holder === this.site.siteId) return { object, source: this.sourceOf(path, object) };
    if (!this.replication.peers.peer(holder)) throw noPeerLinkToHolder(path, holder);
    return { object, source: { kind: 'remote', siteId: holder, objectId: object.id } };
  }

  /** Where an object's bytes can be read from: this site's replica, else a peer holding a good one. */
  private sourceOf(path: string, entry: ObjectRecord): ByteSource {
    const good = entry.replicas.filter((r) => r.status === 'good');
    const local = good.find((r) => r.siteId === this.site.siteId);
    if (local) return { kind: 'local', key: local.physicalPath };
    const remote = good.find((r) => this.replication.peers.peer(r.siteId));
    if (!remote) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        good.length === 0
          ? `${path} has no good copy of its bytes at any site`
          : `the bytes of ${path} are held at ${good.map((r) => r.siteId).join(', ')}, which this site has no peer link to`,
      );
    }
    return { kind: 'remote', siteId: remote.siteId, objectId: entry.id };
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
              ? { object, source: this.sourceOf(path, object) }
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
   */
  async openBytes(source: ByteSource, range?: { start: number; end: number }): Promise<ObjectBytes> {
    if (source.kind === 'local') return { sendTo: (out) => this.storage.send(source.key, range, out) };
    const stream = await this.read(source, range);
    return {
      sendTo: async (out) => {
        let sent = 0;
        stream.on('data', (chunk: Buffer) => (sent += chunk.length));
        await pipeline(stream, out, { end: false });
        return sent;
      },
    };
  }

  /** The bytes (or a range of them) from where `openForRead` found them. */
  async read(source: ByteSource, range?: { start: number; end: number }): Promise<Readable> {
    if (source.kind === 'local') return this.storage.open(source.key, range);
    const path = `${PEER_OBJECT_PATH}/${source.objectId}`;
    const res = await this.replication.peers
      .stream(source.siteId, path, range ? { range: `bytes=${range.start}-${range.end}` } : {})
      .catch((err: unknown) => {
        throw new DomainError(
          ErrorCode.ReplicaUnavailable,
          `the bytes are held at ${source.siteId}, which cannot be reached now: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
    if (!res.ok || !res.body || (range && res.status !== 206)) {
      await res.body?.cancel();
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `the bytes are held at ${source.siteId}, which answered ${res.status}; try again later`,
      );
    }
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
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
