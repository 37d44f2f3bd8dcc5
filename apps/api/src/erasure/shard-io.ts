import { Inject, Injectable } from '@nestjs/common';
import { decodeRange, encodeStripes, type ErasureLayout, type ShardRange } from '@tributary/placement';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { ReplicationService } from '../replication/replication.service';
import { PeerAvailability } from '../sites/peer-availability';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import type { ShardRow } from './erasure.repository';

/** Bytes a shard's stream from a peer buffers ahead of the decoder (a few stripes' chunks). */
export const READ_AHEAD_BYTES = 4 * 1024 * 1024;

/** The erasure peer routes (PeerErasureController). */
export const PEER_ERASURE_PATH = '/api/v1/replication/peer/erasure';

/** Where the shards of one version of an object are: the layout, and the holders of each index. */
export interface ShardSet {
  objectId: string;
  /** The SHA-256 of the object bytes the shards encode. */
  objectChecksum: string;
  layout: ErasureLayout;
  /** Good shards of that version, by index (several sites may hold one index). */
  holders: Map<number, ShardRow[]>;
}

/** The usable shard set of an object's current bytes in these rows, or null when under k indexes. */
export function currentShardSet(
  object: { id: string; size: number; checksum: string },
  rows: readonly ShardRow[],
): ShardSet | null {
  const good = rows.filter(
    (r) =>
      r.objectId === object.id &&
      r.status === 'good' &&
      r.objectChecksum === object.checksum &&
      r.objectSize === object.size,
  );
  const first = good[0];
  if (!first) return null;
  // One layout per version: the rows of another (k, m, chunk) are not mixed in.
  const same = good.filter((r) => r.k === first.k && r.m === first.m && r.chunk === first.chunk);
  const holders = new Map<number, ShardRow[]>();
  for (const r of same) holders.set(r.index, [...(holders.get(r.index) ?? []), r]);
  if (holders.size < first.k) return null;
  return {
    objectId: object.id,
    objectChecksum: object.checksum,
    layout: { k: first.k, m: first.m, chunk: first.chunk, size: object.size },
    holders,
  };
}

/**
 * Shard bytes in and out of this site (docs/erasure.md): a shard read from this site's storage or
 * from a peer's signed route (ranged, its answer bound by the peer connect timeout), a decode from
 * any k shards with failover, and a shard encoded from whole bytes.
 */
@Injectable()
export class ShardIO {
  constructor(
    private readonly storage: StorageService,
    private readonly replication: ReplicationService,
    private readonly availability: PeerAvailability,
    private readonly site: SiteContext,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  /** Opens shard bytes [range.start, range.end) of one holder of it. */
  async openShard(row: ShardRow, range: ShardRange): Promise<AsyncIterable<Uint8Array>> {
    if (range.end <= range.start) return Readable.from([]);
    if (row.siteId === this.site.siteId)
      return this.shardFile(row, { start: range.start, end: range.end - 1 });
    const timeoutMs = this.config.peerReads.connectTimeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    let res: Response;
    try {
      res = await this.replication.peers.stream(
        row.siteId,
        `${PEER_ERASURE_PATH}/shards/${row.objectId}/${row.index}?checksum=${encodeURIComponent(row.objectChecksum)}`,
        { range: `bytes=${range.start}-${range.end - 1}` },
        controller.signal,
      );
    } catch (err) {
      this.availability.markDown(row.siteId);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.availability.markUp(row.siteId);
    if (res.status !== 206 || !res.body) {
      controller.abort(new Error('not the shard asked for'));
      throw new Error(
        `${row.siteId} answered ${res.status} for shard ${row.index} of object ${row.objectId}`,
      );
    }
    // A deep buffer: the peer keeps sending while this site decodes and sends the stripe before.
    return Readable.fromWeb(res.body as WebReadableStream<Uint8Array>, { highWaterMark: READ_AHEAD_BYTES });
  }

  /**
   * Bytes [start, end) of the object from its shards: the data shards first (no Galois work when
   * they answer), this site's and sites that answered lately before others; a shard that fails is
   * replaced by another holder of its index or by another index. One shard more than k is read when
   * there is one, and each stripe is checked against it (decodeRange's `verify`).
   */
  decode(set: ShardSet, start: number, end: number): AsyncGenerator<Buffer> {
    const byIndex = new Map<number, ShardRow[]>();
    for (const [index, rows] of set.holders) {
      const order = this.availability.order(rows.map((r) => r.siteId));
      const local = rows.filter((r) => r.siteId === this.site.siteId);
      byIndex.set(index, [
        ...local,
        ...order.flatMap((s) => rows.filter((r) => r.siteId === s && s !== this.site.siteId)),
      ]);
    }
    const indexes = [...byIndex.keys()].sort((a, b) => a - b);
    const down = (i: number): boolean =>
      (byIndex.get(i) ?? []).every((r) => this.availability.isDown(r.siteId));
    // Data shards first, then parity; an index whose holders did not answer lately goes last.
    const candidates = [...indexes.filter((i) => !down(i)), ...indexes.filter((i) => down(i))];
    return decodeRange(set.layout, start, end, {
      candidates,
      // One shard more than needed when there is one: a damaged shard is outvoted, never returned.
      verify: true,
      open: async (index, range) => {
        let last: unknown;
        for (const row of byIndex.get(index) ?? []) {
          try {
            return await this.openShard(row, range);
          } catch (err) {
            last = err;
          }
        }
        throw last instanceof Error ? last : new Error(`shard ${index} has no holder left`);
      },
    });
  }

  /**
   * This site's file at `key` (range end inclusive), opened only when first read: a file that is
   * gone then is an error of the read (a stream opened early would emit it with no one listening).
   */
  local(key: string, range?: { start: number; end: number }): AsyncIterable<Uint8Array> {
    const storage = this.storage;
    return (async function* () {
      for await (const piece of storage.open(key, range) as AsyncIterable<Uint8Array>) yield piece;
    })();
  }

  /**
   * Shard `index` of the whole copy at `key` here. A data shard is the copy's own bytes, one chunk
   * of every stripe, zero-padded at the end: read as ranges (1/k of the copy), no Galois work. A
   * parity shard needs every stripe whole: the copy is read once and encoded.
   */
  async *shardOfCopy(layout: ErasureLayout, key: string, index: number): AsyncGenerator<Buffer> {
    if (index >= layout.k) {
      yield* this.encodeShard(layout, this.local(key), index);
      return;
    }
    const stripes = Math.ceil(layout.size / (layout.k * layout.chunk));
    for (let s = 0; s < stripes; s += 1) {
      const start = s * layout.k * layout.chunk + index * layout.chunk;
      const end = Math.min(layout.size, start + layout.chunk);
      let got = 0;
      if (end > start) {
        for await (const piece of this.local(key, { start, end: end - 1 })) {
          got += piece.length;
          yield Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
        }
      }
      if (got !== Math.max(0, end - start)) throw new Error(`the copy at ${key} is shorter than the object`);
      if (got < layout.chunk) yield Buffer.alloc(layout.chunk - got);
    }
  }

  /**
   * This site's shard file (range end inclusive). A shard on another storage resource than the
   * default (the resource domain) is read from that resource: its key names no copy row, so the
   * storage would look for it in the default resource.
   */
  shardFile(
    row: Pick<ShardRow, 'key' | 'resourceId'>,
    range?: { start: number; end: number },
  ): AsyncIterable<Uint8Array> {
    if (row.resourceId === this.site.resourceId.toString()) return this.local(row.key, range);
    const storage = this.storage;
    return (async function* () {
      let at = 0;
      const from = range?.start ?? 0;
      const to = range ? range.end + 1 : Number.MAX_SAFE_INTEGER;
      for await (const p of storage.openIn(BigInt(row.resourceId), row.key) as AsyncIterable<Uint8Array>) {
        const piece = p.subarray(Math.max(0, from - at), Math.max(0, Math.min(p.length, to - at)));
        at += p.length;
        if (piece.length > 0) yield piece;
        if (at >= to) return;
      }
    })();
  }

  /** Shard `index` of whole object bytes, stripe by stripe (each chunk copied out of the reused stripe). */
  async *encodeShard(
    layout: ErasureLayout,
    bytes: AsyncIterable<Uint8Array>,
    index: number,
  ): AsyncGenerator<Buffer> {
    for await (const stripe of encodeStripes(layout, bytes)) yield Buffer.from(stripe.shards[index]!);
  }
}
