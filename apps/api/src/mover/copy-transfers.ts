import { createHash, randomUUID, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { downloadRanges, TransportError, type RangeReader } from '@tributary/buffer';
import {
  readFrames,
  SourceUnavailableError,
  type CopyJob,
  type MoverTransfers,
  type SurplusCopy,
  type TransferContext,
} from '@tributary/placement';
import type { PeerClient } from '@tributary/replication';
import type { PeerAvailability } from '../sites/peer-availability';
import type { StagedFile } from '../storage/storage-driver';
import type { StorageService } from '../storage/storage.service';
import type { MoverRepository } from './mover.repository';

/** A peer's route to the bytes of an object it holds (PeerDataController). */
export const PEER_OBJECT_PATH = '/api/v1/replication/peer/objects';
/** The mover's peer routes (PeerPlacementController). */
export const PEER_PLACEMENT_PATH = '/api/v1/replication/peer/placement';
/** Most objects one batch request names. */
export const MAX_BATCH_IDS = 500;

const MiB = 1024 * 1024;
/** A body that sends nothing for this long is given up (the peer hangs). */
const IDLE_MS = 30_000;

export interface CopyTransfersOptions {
  siteId: () => string;
  repo: MoverRepository;
  storage: StorageService;
  peers: PeerClient;
  availability: PeerAvailability;
  /** Longest wait for a peer's answer headers. */
  connectTimeoutMs: number;
  /** Objects up to this size travel in batches (and are held whole in memory on the way). */
  smallBytes: number;
  /** Bytes per ranged request of a large copy. */
  chunkBytes?: number;
  /** Parallel ranged requests per large copy. */
  streams?: number;
}

/** The draft id of a copy in progress: its row and the checksum it is for. */
const draftId = (job: CopyJob): string => `r${job.replicaId}-${hexOf(job.checksum).slice(0, 16)}`;

/** A checksum's hex SHA-256 (the catalog keeps it bare; an `sha256:` prefix is allowed too). */
const hexOf = (checksum: string): string => checksum.replace(/^sha256:/, '');

/**
 * How the mover's copies reach this site's storage: signed peer requests (ranged GETs of one
 * object, or one batch answer of many small ones), hashed as they stream, written through the
 * storage driver (fsynced, renamed into place) and recorded `good` only under the object's lock
 * when equal to its checksum then. A large copy writes into a copy draft kept across restarts and
 * resumes from it after re-hashing what is there.
 */
export class CopyTransfers implements MoverTransfers {
  constructor(private readonly o: CopyTransfersOptions) {}

  async copy(job: CopyJob, source: string, context: TransferContext): Promise<void> {
    const store = this.o.storage.copies;
    const id = draftId(job);
    // Drafts of this row for older bytes are of no use now.
    for (const other of await store.list())
      if (other.startsWith(`r${job.replicaId}-`) && other !== id) await store.remove(other);
    await this.o.repo.markCopying(job.replicaId, this.o.siteId());
    let offset = 0;
    let hash: Hash = createHash('sha256');
    if (await store.exists(id)) {
      // Resume: what is there is re-hashed (it may be anything after a crash: the whole file is
      // verified against the checksum before it becomes good).
      for await (const piece of store.read(id) as AsyncIterable<Buffer>) {
        hash.update(piece);
        offset += piece.length;
      }
      if (offset > job.size) {
        await store.truncate(id, 0);
        offset = 0;
        hash = createHash('sha256');
      }
    } else {
      await store.create(id);
    }
    context.resumedAt(job.replicaId, offset);
    const writer = await store.open(id);
    let sha256: string;
    try {
      sha256 = await downloadRanges(
        this.reader(job, source),
        { write: (bytes, position) => writer.write(bytes, 0, bytes.length, position) },
        job.size,
        {
          offset,
          hash,
          chunkBytes: this.o.chunkBytes ?? 4 * MiB,
          streams: this.o.streams ?? 4,
          signal: context.signal,
          retry: { retries: 3, baseDelayMs: 500, maxDelayMs: 5000 },
          onRange: (bytes) => context.received(job.replicaId, bytes),
        },
      );
    } catch (err) {
      if (err instanceof TransportError) throw new SourceUnavailableError(source, err.message);
      throw err;
    } finally {
      await writer.close();
    }
    if (sha256 !== hexOf(job.checksum)) {
      await store.remove(id);
      throw new Error(`the bytes from ${source} hash to ${sha256}, not ${job.checksum}`);
    }
    const staged = await store.adopt(id, { size: job.size, sha256 });
    try {
      await this.finish(job, staged);
    } catch (err) {
      await store.remove(id);
      throw err;
    }
    // A local draft was renamed into place; an object store's was uploaded and is left behind.
    await store.remove(id).catch(() => undefined);
  }

  async copyBatch(
    jobs: CopyJob[],
    source: string,
    context: TransferContext,
  ): Promise<Map<string, Error | undefined>> {
    const out = new Map<string, Error | undefined>();
    const byObject = new Map(jobs.map((j) => [j.objectId, j]));
    const path = `${PEER_PLACEMENT_PATH}/batch?ids=${jobs.map((j) => j.objectId).join(',')}`;
    // A batch is small: one that takes longer than this is stuck (a peer that stopped sending).
    const res = await this.open(
      source,
      path,
      {},
      AbortSignal.any([context.signal, AbortSignal.timeout(300_000)]),
    );
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      throw new Error(`${source} answered the batch request with ${res.status}`);
    }
    // The objects are gathered as they arrive, then staged together (written, hashed, made durable
    // in one flush) and recorded in one transaction: a batch costs one flush and one commit rather
    // than an fsync and a commit per object.
    const received: Array<{ job: CopyJob; bytes: Buffer }> = [];
    const taken = new Set<string>();
    try {
      const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
      for await (const { header, bytes } of readFrames(body, this.o.smallBytes)) {
        const job = byObject.get(header.id);
        if (!job || out.has(job.replicaId) || taken.has(job.replicaId)) continue;
        if ('error' in header) {
          out.set(job.replicaId, new Error(`${source}: ${header.error}`));
          continue;
        }
        await context.received(job.replicaId, bytes.length);
        taken.add(job.replicaId);
        received.push({ job, bytes });
      }
    } catch (err) {
      if (context.signal.aborted) throw err;
      const cut = new Error(`the batch answer from ${source} broke off: ${toError(err).message}`);
      for (const job of jobs)
        if (!out.has(job.replicaId) && !taken.has(job.replicaId)) out.set(job.replicaId, cut);
    }
    if (received.length === 0) return out;
    let files: StagedFile[];
    try {
      files = await this.o.storage.stageAll(received.map((r) => r.bytes));
    } catch (err) {
      for (const { job } of received) out.set(job.replicaId, toError(err));
      return out;
    }
    const staged: Array<{ job: CopyJob; file: StagedFile }> = [];
    for (const [i, { job }] of received.entries()) {
      const file = files[i]!;
      if (file.size === job.size && file.sha256 === hexOf(job.checksum)) {
        staged.push({ job, file });
        continue;
      }
      await file.discard().catch(() => undefined);
      out.set(
        job.replicaId,
        new Error(
          `the ${file.size} bytes received hash to ${file.sha256}, not ${job.checksum} (${job.size} bytes)`,
        ),
      );
    }
    for (const [replicaId, result] of await this.finishMany(staged)) out.set(replicaId, result);
    return out;
  }

  async keep(site: string, objectId: string, checksum: string): Promise<boolean> {
    const answer = await this.o.peers.request<{ keep?: unknown }>(
      site,
      'POST',
      `${PEER_PLACEMENT_PATH}/keep`,
      { objectId, checksum },
      10_000,
    );
    return answer.keep === true;
  }

  async remove(copy: SurplusCopy): Promise<boolean> {
    const key = await this.o.repo.removeCopy(copy.replicaId, this.o.siteId(), {
      good: copy.good,
      checksum: copy.checksum,
    });
    if (key === null) return false;
    if (key) await this.o.storage.remove(key).catch(() => undefined);
    const store = this.o.storage.copies;
    for (const id of await store.list()) if (id.startsWith(`r${copy.replicaId}-`)) await store.remove(id);
    return true;
  }

  /**
   * Staged copies placed under new keys and marked good in one transaction
   * (MoverRepository.completeCopies); what is not recorded leaves nothing behind.
   */
  private async finishMany(
    staged: ReadonlyArray<{ job: CopyJob; file: StagedFile }>,
  ): Promise<Map<string, Error | undefined>> {
    const out = new Map<string, Error | undefined>();
    if (staged.length === 0) return out;
    // An object store's staged bytes keep the fresh key they already sit under (no copy).
    const keys = new Map(staged.map((s) => [s.job.replicaId, s.file.key ?? randomUUID()]));
    const files = new Map(staged.map((s) => [s.job.replicaId, s.file]));
    const placed = new Set<string>();
    try {
      const outcomes = await this.o.repo.completeCopies(
        this.o.siteId(),
        staged.map(({ job, file }) => ({
          replicaId: job.replicaId,
          objectId: job.objectId,
          key: keys.get(job.replicaId)!,
          size: file.size,
          checksum: job.checksum,
        })),
        async (replicaId) => {
          await files.get(replicaId)!.commit(keys.get(replicaId)!);
          placed.add(replicaId);
        },
      );
      for (const { job, file } of staged) {
        const outcome = outcomes.get(job.replicaId);
        if (outcome?.done) {
          out.set(job.replicaId, undefined);
          if (outcome.previousKey && outcome.previousKey !== keys.get(job.replicaId))
            await this.o.storage.remove(outcome.previousKey).catch(() => undefined);
        } else {
          await file.discard().catch(() => undefined);
          out.set(job.replicaId, new Error(outcome?.reason ?? 'not recorded'));
        }
      }
    } catch (err) {
      // The transaction did not commit: nothing of the batch stays.
      for (const { job, file } of staged) {
        if (placed.has(job.replicaId))
          await this.o.storage.remove(keys.get(job.replicaId)!).catch(() => undefined);
        else await file.discard().catch(() => undefined);
        out.set(job.replicaId, toError(err));
      }
    }
    return out;
  }

  /**
   * Puts the verified bytes under a new key and marks the row good, under the object's lock and
   * only if the object's checksum is still the one the bytes hash to; otherwise nothing stays.
   */
  private async finish(job: CopyJob, staged: StagedFile): Promise<void> {
    const error = (await this.finishMany([{ job, file: staged }])).get(job.replicaId);
    if (error) throw error;
  }

  /** Ranged reads of one object from `source`, pinned to the object's checksum (the ETag). */
  private reader(job: CopyJob, source: string): RangeReader {
    return {
      read: async (start, into, onProgress, signal) => {
        const res = await this.open(
          source,
          `${PEER_OBJECT_PATH}/${job.objectId}`,
          { range: `bytes=${start}-${start + into.length - 1}` },
          signal,
        ).catch((err: unknown) => {
          if (signal.aborted) throw err;
          throw new TransportError(toError(err).message);
        });
        if (res.status !== 206 || res.headers.get('etag') !== `"${job.checksum}"` || !res.body) {
          await res.body?.cancel();
          throw new Error(`${source} does not hold these bytes now (it answered ${res.status})`);
        }
        let filled = 0;
        const idle = new AbortController();
        let timer = setTimeout(() => idle.abort(), IDLE_MS);
        const stop = (): void => idle.abort();
        signal.addEventListener('abort', stop, { once: true });
        const idled = new Promise<never>((_, reject) =>
          idle.signal.addEventListener(
            'abort',
            () => reject(new TransportError(`${source} stopped sending`)),
            {
              once: true,
            },
          ),
        );
        idled.catch(() => undefined);
        const reader = (res.body as WebReadableStream<Uint8Array>).getReader();
        try {
          for (;;) {
            const next = await Promise.race([reader.read(), idled]);
            if (next.done) break;
            clearTimeout(timer);
            timer = setTimeout(() => idle.abort(), IDLE_MS);
            const chunk: Uint8Array = next.value;
            const n = Math.min(chunk.length, into.length - filled);
            into.set(chunk.subarray(0, n), filled);
            filled += n;
            onProgress(filled);
            if (filled >= into.length) break;
          }
        } catch (err) {
          if (signal.aborted) throw err;
          if (err instanceof TransportError) throw err;
          throw new TransportError(`the answer from ${source} broke off: ${toError(err).message}`);
        } finally {
          clearTimeout(timer);
          signal.removeEventListener('abort', stop);
          await reader.cancel().catch(() => undefined);
        }
        return filled;
      },
    };
  }

  /**
   * A signed GET to a peer whose answer's headers must come within the connect timeout; a peer that
   * does not answer is remembered as down (tried last) and is the copy's trouble, not the object's.
   */
  private async open(
    source: string,
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Response> {
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new Error(`${source} did not answer within ${this.o.connectTimeoutMs} ms`)),
      this.o.connectTimeoutMs,
    );
    try {
      const res = await this.o.peers.stream(source, path, headers, AbortSignal.any([signal, timeout.signal]));
      this.o.availability.markUp(source);
      return res;
    } catch (err) {
      if (signal.aborted) throw err;
      this.o.availability.markDown(source);
      throw new SourceUnavailableError(source, toError(err).message);
    } finally {
      clearTimeout(timer);
    }
  }
}

function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
