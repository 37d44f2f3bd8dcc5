/**
 * Trees of files for `trib put`, `get` and `cp` (recursive or not): walks the source, skips what is
 * already the same, sends small files many to a request (`/data/batch`, `/data/batch-read`) and large
 * ones one at a time through the buffer package's object transfer (resumable, parallel ranges).
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ApiError, ErrorCode, normalizeName, type EntryDto } from '@tributary/shared';
import { downloadFile, sha256OfFile, sleep, uploadFile, withRetry, DEFAULT_RETRY } from '@tributary/buffer';
import { agentHome } from '../agent-home';
import { CliError, ExitCode } from './errors';
import type { TransferTracker } from './progress';
import { parallel, type SiteService } from './service';

const MiB = 1024 * 1024;

/**
 * Files up to this size travel whole: new ones many at a time in one batch request
 * (`POST /api/v1/data/batch`), downloads in one GET checked against the catalog's SHA-256. Larger
 * files go through the transfer engine (resumable upload sessions, parallel ranged downloads).
 */
export const SMALL_FILE_BYTES = 4 * MiB;
const BATCH_MAX_FILES = 500;
const BATCH_MAX_BYTES = 32 * MiB;

export interface TransferSettings {
  /** Files (or batches) in flight at once. */
  parallel: number;
  /** Replace objects or local files whose content differs. */
  force: boolean;
  chunkBytes?: number;
  signal?: AbortSignal;
  env: NodeJS.ProcessEnv;
}

/** What a put or get did, for the summary line and --json. */
export interface TransferSummary {
  files: number;
  transferred: number;
  unchanged: number;
  bytes: number;
  seconds: number;
  collections?: number;
}

/** Counts what a put or get does, telling the progress tracker as it goes, and sums it up. */
class TransferTally {
  private transferred = 0;
  private unchanged = 0;
  private bytes = 0;
  private readonly started = performance.now();

  constructor(
    private readonly tracker: TransferTracker,
    private readonly files: number,
    totalBytes: number,
  ) {
    tracker.plan(files, totalBytes);
  }

  /** A file already the same at the other end: its bytes count as done, none travel. */
  same(size: number): void {
    this.unchanged++;
    this.tracker.bytes(size);
    this.tracker.fileDone(true);
  }

  /** A file sent or received whole (the tracker has been told of its bytes). */
  done(size: number): void {
    this.transferred++;
    this.bytes += size;
    this.tracker.fileDone();
  }

  summary(): TransferSummary {
    return {
      files: this.files,
      transferred: this.transferred,
      unchanged: this.unchanged,
      bytes: this.bytes,
      seconds: (performance.now() - this.started) / 1000,
    };
  }
}

export interface LocalFile {
  /** Path relative to the top directory, with '/' separators. */
  relative: string;
  absolute: string;
  size: number;
  mtimeMs: number;
}

/** Every file and directory below `root`, following symbolic links to files (not to directories). */
export async function walkLocal(root: string): Promise<{ dirs: string[]; files: LocalFile[] }> {
  const dirs: string[] = [];
  const files: LocalFile[] = [];
  let level = [''];
  while (level.length > 0) {
    const next: string[] = [];
    await parallel(level, 8, async (relativeDir) => {
      const absoluteDir = path.join(root, relativeDir);
      const entries = await fs.readdir(absoluteDir, { withFileTypes: true });
      for (const entry of entries) {
        const relative = relativeDir ? `${relativeDir}/${entry.name}` : entry.name;
        const absolute = path.join(absoluteDir, entry.name);
        if (entry.isDirectory()) {
          dirs.push(relative);
          next.push(relative);
        } else if (entry.isFile() || entry.isSymbolicLink()) {
          const stat = await fs.stat(absolute).catch(() => undefined);
          if (stat?.isFile()) files.push({ relative, absolute, size: stat.size, mtimeMs: stat.mtimeMs });
        }
      }
    });
    level = next;
  }
  dirs.sort();
  files.sort((a, b) => a.relative.localeCompare(b.relative));
  return { dirs, files };
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const hexOf = (checksum: string | null): string | undefined => checksum?.replace(/^sha256:/, '');

/** Creates a collection; an existing one is fine. Returns true when it was created now. */
export async function ensureCollection(
  service: SiteService,
  remote: string,
  parents: boolean,
): Promise<boolean> {
  try {
    await service.client.createCollection(remote, parents);
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.code === ErrorCode.NameTaken) {
      const existing = await service.client.stat(remote);
      if (existing.kind !== 'collection') {
        throw new CliError(
          `${remote} exists and is not a collection`,
          ExitCode.Conflict,
          undefined,
          'NOT_A_COLLECTION',
        );
      }
      return false;
    }
    throw err;
  }
}

/** Names of the objects already in a collection, with their checksums. */
async function existingObjects(service: SiteService, collection: string): Promise<Map<string, EntryDto>> {
  const map = new Map<string, EntryDto>();
  for (const child of await service.children(collection)) map.set(child.name, child);
  return map;
}

/** A few targets are cheaper to stat one by one than to list a large collection. */
async function statEach(
  service: SiteService,
  list: Array<{ remote: string; name: string }>,
): Promise<Map<string, EntryDto>> {
  const map = new Map<string, EntryDto>();
  for (const item of list) {
    try {
      map.set(item.name, await service.client.stat(item.remote));
    } catch (err) {
      if (!(err instanceof ApiError && err.code === ErrorCode.NotFound)) throw err;
    }
  }
  return map;
}

/**
 * Uploads local files to remote paths. Small new files go in batches per collection, small
 * replacements in one PUT each, large files through resumable upload sessions (an interrupted
 * upload resumes from the acknowledged byte when the same command runs again). A remote object
 * whose SHA-256 equals the local file is left alone; one that differs needs `force`.
 */
export async function uploadFiles(
  service: SiteService,
  items: Array<{ file: LocalFile; remote: string }>,
  /** Collections known to be new (created by this command): nothing there to compare against. */
  freshCollections: Set<string>,
  settings: TransferSettings,
  tracker: TransferTracker,
): Promise<TransferSummary> {
  const tally = new TransferTally(
    tracker,
    items.length,
    items.reduce((n, i) => n + i.file.size, 0),
  );
  const byCollection = new Map<string, Array<{ file: LocalFile; remote: string; name: string }>>();
  for (const item of items) {
    const at = item.remote.lastIndexOf('/');
    const collection = at === 0 ? '/' : item.remote.slice(0, at);
    const name = normalizeName(item.remote.slice(at + 1));
    const list = byCollection.get(collection) ?? [];
    list.push({ ...item, name });
    byCollection.set(collection, list);
  }

  // Learn what exists, then sort each file into a batch, a single PUT or a session upload.
  // Small files are read when their batch is sent, so memory holds a few batches, not the tree.
  type Small = { file: LocalFile; remote: string; name: string };
  const batches: Array<{ collection: string; files: Small[] }> = [];
  const replacements: Small[] = [];
  const large: Array<{ file: LocalFile; remote: string; overwrite: boolean; sha?: string }> = [];
  const clashes: string[] = [];

  await parallel([...byCollection.entries()], settings.parallel, async ([collection, list]) => {
    const existing = freshCollections.has(collection)
      ? new Map<string, EntryDto>()
      : list.length <= 16
        ? await statEach(service, list)
        : await existingObjects(service, collection);
    let batch: Small[] = [];
    let batchBytes = 0;
    const flushBatch = () => {
      if (batch.length > 0) batches.push({ collection, files: batch });
      batch = [];
      batchBytes = 0;
    };
    for (const item of list) {
      const there = existing.get(item.name);
      if (there && there.kind === 'collection') {
        throw new CliError(
          `${item.remote} is a collection; cannot replace it with a file`,
          ExitCode.Conflict,
          undefined,
          'NOT_AN_OBJECT',
        );
      }
      if (item.file.size <= SMALL_FILE_BYTES) {
        if (there) {
          const sha =
            there.size === item.file.size ? sha256(await fs.readFile(item.file.absolute)) : undefined;
          if (sha !== undefined && hexOf(there.checksum) === sha) {
            tally.same(item.file.size);
            continue;
          }
          if (!settings.force) {
            clashes.push(item.remote);
            continue;
          }
          replacements.push(item);
          continue;
        }
        if (batch.length >= BATCH_MAX_FILES || batchBytes + item.file.size > BATCH_MAX_BYTES) flushBatch();
        batch.push(item);
        batchBytes += item.file.size;
      } else {
        if (there) {
          if (there.size === item.file.size) {
            const sha = await sha256OfFile(item.file.absolute, undefined, settings.signal);
            if (hexOf(there.checksum) === sha) {
              tally.same(item.file.size);
              continue;
            }
            if (!settings.force) clashes.push(item.remote);
            else large.push({ file: item.file, remote: item.remote, overwrite: true, sha });
            continue;
          }
          if (!settings.force) {
            clashes.push(item.remote);
            continue;
          }
        }
        large.push({ file: item.file, remote: item.remote, overwrite: Boolean(there) });
      }
    }
    flushBatch();
  });

  if (clashes.length > 0) {
    throw clashError(clashes, 'remote object(s)', 'nothing was uploaded', ErrorCode.NameTaken);
  }

  const readSmall = async (f: Small) => {
    const data = await fs.readFile(f.file.absolute);
    return { ...f, data, sha: sha256(data) };
  };
  // Batches and large files hold memory or streams: a few at a time; small replacements: many.
  const few = Math.max(1, Math.min(4, settings.parallel));
  await parallel(batches, few, async ({ collection, files }) => {
    const loaded: Array<Small & { data: Buffer; sha: string }> = [];
    await parallel(files, 16, async (f) => {
      loaded.push(await readSmall(f));
    });
    const entries = await withRetry(
      () =>
        service.client.uploadMany(
          collection,
          loaded.map((f) => ({ name: f.name, body: new Blob([new Uint8Array(f.data)]) })),
        ),
      DEFAULT_RETRY,
      { signal: settings.signal },
    );
    const byName = new Map(entries.map((e) => [e.name, e]));
    for (const f of loaded) {
      const entry = byName.get(f.name);
      if (!entry || hexOf(entry.checksum) !== f.sha) {
        throw new CliError(
          `${f.remote}: the site recorded ${entry?.checksum ?? 'nothing'}, the local file is sha256:${f.sha}`,
          ExitCode.Integrity,
          undefined,
          ErrorCode.ChecksumMismatch,
        );
      }
      tracker.bytes(f.data.length);
      tally.done(f.data.length);
    }
  });
  await parallel(replacements, settings.parallel, async (item) => {
    const f = await readSmall(item);
    await withRetry(
      () =>
        service.client.upload(f.remote, new Blob([new Uint8Array(f.data)]), {
          overwrite: true,
          sha256: f.sha,
          signal: settings.signal,
        }),
      DEFAULT_RETRY,
      { signal: settings.signal },
    );
    tracker.bytes(f.data.length);
    tally.done(f.data.length);
  });
  await parallel(large, few, async (item) => {
    await uploadLarge(service, item.file, item.remote, item.overwrite, item.sha, settings, tracker);
    tally.done(item.file.size);
  });
  return tally.summary();
}

/** Where the session of an interrupted upload of `local` to `remote` at `siteUrl` is kept. */
export function uploadResumeFile(
  env: NodeJS.ProcessEnv,
  siteUrl: string,
  local: string,
  remote: string,
): string {
  const key = createHash('sha256').update(`${siteUrl}\n${local}\n${remote}`).digest('hex').slice(0, 32);
  return path.join(agentHome(env), 'uploads', `${key}.json`);
}

/** A resumable upload; its session id is kept in agentHome()/uploads until it completes. */
async function uploadLarge(
  service: SiteService,
  file: LocalFile,
  remote: string,
  overwrite: boolean,
  sha: string | undefined,
  settings: TransferSettings,
  tracker: TransferTracker,
): Promise<void> {
  const resumeFile = uploadResumeFile(settings.env, service.site.url, file.absolute, remote);
  await fs.mkdir(path.dirname(resumeFile), { recursive: true, mode: 0o700 });
  let sessionId: string | undefined;
  try {
    const saved = JSON.parse(await fs.readFile(resumeFile, 'utf8')) as {
      sessionId: string;
      size: number;
      mtimeMs: number;
    };
    if (saved.size === file.size && saved.mtimeMs === file.mtimeMs) sessionId = saved.sessionId;
  } catch {
    // Nothing to resume.
  }
  let counted = 0;
  const attempt = (resume: string | undefined) =>
    uploadFile(service.api, file.absolute, remote, {
      overwrite,
      sha256: sha,
      sessionId: resume,
      chunkBytes: settings.chunkBytes,
      signal: settings.signal,
      onSession: (session) => {
        void fs
          .writeFile(
            resumeFile,
            JSON.stringify({ sessionId: session.id, size: file.size, mtimeMs: file.mtimeMs }),
            { mode: 0o600 },
          )
          .catch(() => undefined);
      },
      onProgress: (p) => {
        if (p.phase !== 'transfer') return;
        tracker.bytes(p.bytes - counted);
        counted = p.bytes;
      },
    });
  try {
    await attempt(sessionId);
  } catch (err) {
    const stale =
      sessionId !== undefined &&
      err instanceof ApiError &&
      (err.code === ErrorCode.NotFound || err.code === ErrorCode.UploadExpired);
    if (!stale) throw err;
    await attempt(undefined);
  }
  if (counted < file.size) tracker.bytes(file.size - counted);
  await fs.rm(resumeFile, { force: true });
}

/**
 * Downloads objects to local files, each written beside its target and renamed into place when
 * its SHA-256 matched the catalog. A local file with the same SHA-256 is left alone; one that
 * differs needs `force`.
 */
export async function downloadObjects(
  service: SiteService,
  items: Array<{ entry: EntryDto; local: string }>,
  settings: TransferSettings,
  tracker: TransferTracker,
): Promise<TransferSummary> {
  const tally = new TransferTally(
    tracker,
    items.length,
    items.reduce((n, i) => n + i.entry.size, 0),
  );
  const clashes: string[] = [];
  const todo: typeof items = [];
  await parallel(items, settings.parallel, async (item) => {
    const stat = await fs.stat(item.local).catch(() => undefined);
    if (!stat) {
      todo.push(item);
      return;
    }
    if (stat.isDirectory()) {
      throw new CliError(
        `${item.local} is a directory; cannot replace it with ${item.entry.path}`,
        ExitCode.Conflict,
      );
    }
    if (stat.size === item.entry.size && (await sha256OfFile(item.local)) === hexOf(item.entry.checksum)) {
      tally.same(item.entry.size);
      return;
    }
    if (!settings.force) clashes.push(item.local);
    else todo.push(item);
  });
  if (clashes.length > 0) {
    throw clashError(clashes, 'local file(s)', 'nothing was downloaded', 'FILE_EXISTS');
  }
  const place = async (local: string, write: (part: string) => Promise<void>): Promise<void> => {
    const part = path.join(path.dirname(local), `.${path.basename(local)}.trib-part`);
    try {
      await write(part);
      await fs.rename(part, local);
    } catch (err) {
      await fs.rm(part, { force: true });
      throw err;
    }
  };

  // Small objects travel many to a request (POST /api/v1/data/batch-read); a site without that
  // route gets one GET per object.
  const small = todo.filter((i) => i.entry.size <= SMALL_FILE_BYTES);
  const large = todo.filter((i) => i.entry.size > SMALL_FILE_BYTES);
  const batches: Array<typeof small> = [];
  let batch: typeof small = [];
  let batchBytes = 0;
  for (const item of small) {
    if (batch.length >= BATCH_MAX_FILES || batchBytes + item.entry.size > BATCH_MAX_BYTES) {
      batches.push(batch);
      batch = [];
      batchBytes = 0;
    }
    batch.push(item);
    batchBytes += item.entry.size;
  }
  if (batch.length > 0) batches.push(batch);
  let batchReadMissing = false;
  const single = async ({ entry, local }: { entry: EntryDto; local: string }): Promise<void> => {
    await awaitStaged(service, entry, tracker, settings.signal);
    const { body } = await withRetry(
      () =>
        service.api.bytes({
          method: 'GET',
          url: `/api/v1/data?path=${encodeURIComponent(entry.path)}`,
          signal: settings.signal,
        }),
      DEFAULT_RETRY,
      { signal: settings.signal },
    );
    checkBytes(entry, body);
    await place(local, (part) => fs.writeFile(part, body));
    tracker.bytes(body.length);
    tally.done(entry.size);
  };
  await parallel(batches, Math.max(1, Math.min(4, settings.parallel)), async (group) => {
    if (!batchReadMissing && group.length > 1) {
      let objects: Map<string, Buffer> | undefined;
      try {
        objects = await readBatch(
          service,
          group.map((i) => i.entry.path),
          settings.signal,
        );
      } catch (err) {
        if (!(err instanceof ApiError && err.code === ErrorCode.RouteNotFound)) throw err;
        batchReadMissing = true;
      }
      if (objects) {
        const received = objects;
        await parallel(group, 16, async ({ entry, local }) => {
          const body = received.get(entry.path);
          if (!body) throw new CliError(`${entry.path}: the site's batch answer left it out`, ExitCode.Error);
          checkBytes(entry, body);
          await place(local, (part) => fs.writeFile(part, body));
          tracker.bytes(body.length);
          tally.done(entry.size);
        });
        return;
      }
    }
    await parallel(group, settings.parallel, single);
  });
  await parallel(large, Math.max(1, Math.min(4, settings.parallel)), async ({ entry, local }) => {
    let counted = 0;
    await awaitStaged(service, entry, tracker, settings.signal);
    await place(local, (part) =>
      downloadFile(service.api, entry.path, part, {
        chunkBytes: settings.chunkBytes,
        signal: settings.signal,
        onProgress: (p) => {
          if (p.phase !== 'transfer') return;
          tracker.bytes(p.bytes - counted);
          counted = p.bytes;
        },
      }).then(() => undefined),
    );
    if (counted < entry.size) tracker.bytes(entry.size - counted);
    tally.done(entry.size);
  });
  return tally.summary();
}

/**
 * Waits while the site stages the object from a compound resource's archive into its cache
 * (docs/storage.md, "Compound resources"): a one-byte read answers `202` with the progress, shown
 * as "staging", and is asked again after its Retry-After. Any other answer ends the wait; the
 * download itself reports failures.
 */
export async function awaitStaged(
  service: SiteService,
  entry: EntryDto,
  tracker: TransferTracker,
  signal?: AbortSignal,
): Promise<void> {
  if (entry.size === 0) return;
  for (;;) {
    try {
      const res = await service.api.send({
        method: 'GET',
        url: `/api/v1/data?path=${encodeURIComponent(entry.path)}`,
        headers: { range: 'bytes=0-0' },
        signal,
      });
      await res.body?.cancel();
      return;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === ErrorCode.ObjectStaging)) return;
      const number = (field: string): number => Number(err.details?.[field]?.[0] ?? 0) || 0;
      tracker.staging(entry.path, number('bytesStaged'), number('bytesTotal') || entry.size);
      await sleep(Math.min(10, Math.max(1, number('retryAfterSeconds'))) * 1000, signal);
    }
  }
}

/** The bytes of a small object must hash to what the catalog says. */
function checkBytes(entry: EntryDto, body: Uint8Array): void {
  const actual = sha256(body);
  if (actual !== hexOf(entry.checksum)) {
    throw new CliError(
      `${entry.path}: the bytes received hash to sha256:${actual}, the catalog says ${entry.checksum}`,
      ExitCode.Integrity,
      'the object may have changed during the download: run the command again',
      ErrorCode.ChecksumMismatch,
    );
  }
}

/**
 * Many objects in one request (`POST /api/v1/data/batch-read`): the answer is, per object, a line
 * of JSON `{"path","size","sha256"}` and then exactly `size` bytes.
 */
export async function readBatch(
  service: SiteService,
  paths: string[],
  signal?: AbortSignal,
): Promise<Map<string, Buffer>> {
  const { body } = await withRetry(
    () =>
      service.api.bytes({
        method: 'POST',
        url: '/api/v1/data/batch-read',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paths }),
        signal,
      }),
    DEFAULT_RETRY,
    { signal },
  );
  return parseBatchRead(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
}

/** Splits a batch-read answer; a short or malformed answer is an error, never a partial result. */
export function parseBatchRead(body: Buffer): Map<string, Buffer> {
  const objects = new Map<string, Buffer>();
  let at = 0;
  while (at < body.length) {
    const end = body.indexOf(0x0a, at);
    if (end < 0)
      throw new CliError(
        'the batch answer ended inside a header',
        ExitCode.Unreachable,
        undefined,
        'TRUNCATED',
      );
    let header: { path?: unknown; size?: unknown; sha256?: unknown };
    try {
      header = JSON.parse(body.subarray(at, end).toString('utf8')) as typeof header;
    } catch {
      throw new CliError(
        'the batch answer holds a header that is not JSON',
        ExitCode.Error,
        undefined,
        'MALFORMED',
      );
    }
    if (
      typeof header.path !== 'string' ||
      typeof header.size !== 'number' ||
      !Number.isSafeInteger(header.size) ||
      header.size < 0
    ) {
      throw new CliError(
        'the batch answer holds a header without path and size',
        ExitCode.Error,
        undefined,
        'MALFORMED',
      );
    }
    const start = end + 1;
    if (start + header.size > body.length) {
      throw new CliError(
        `the batch answer ended inside ${header.path}`,
        ExitCode.Unreachable,
        undefined,
        'TRUNCATED',
      );
    }
    objects.set(header.path, body.subarray(start, start + header.size));
    at = start + header.size;
  }
  return objects;
}

/** Copies one object inside the federation: its bytes stream from a GET into a PUT, checksum checked by the site. */
export async function copyObject(
  service: SiteService,
  entry: EntryDto,
  to: string,
  force: boolean,
  signal?: AbortSignal,
): Promise<EntryDto> {
  const res = await service.api.send({
    method: 'GET',
    url: `/api/v1/data?path=${encodeURIComponent(entry.path)}`,
    signal,
  });
  if (!res.body) throw new CliError(`${entry.path}: the site sent no bytes`, ExitCode.Error);
  return service.client.upload(to, res.body, {
    overwrite: force,
    sha256: hexOf(entry.checksum),
    contentLength: entry.size,
    signal,
  });
}

/** Refuses a transfer that would replace files with different content (the first five named). */
function clashError(clashes: string[], what: string, nothingDone: string, code: string): CliError {
  const sorted = [...clashes].sort();
  const shown = sorted.slice(0, 5).join(', ') + (sorted.length > 5 ? ` and ${sorted.length - 5} more` : '');
  return new CliError(
    `${sorted.length} ${what} exist with different content: ${shown}`,
    ExitCode.Conflict,
    `pass --force to replace them (${nothingDone})`,
    code,
  );
}
