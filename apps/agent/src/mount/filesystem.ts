import {
  AdvanceBufferPool,
  ApiRemoteFile,
  type ApiConnection,
  type BufferedFile,
  type FileAttributes,
  type RetryPolicy,
} from '@tributary/buffer';
import {
  joinPath,
  MAX_NAME_BYTES,
  MAX_PATH_BYTES,
  normalizePath,
  PathError,
  splitPath,
  type EntryDto,
} from '@tributary/shared';
import { MetadataCache } from './cache';
import { errno, FsError, isUnreachable, RemoteNamespace, toErrno } from './remote';
import { PatchFile } from './patch-file';
import { BATCH_FILES, ReadAhead, SMALL_READ_BYTES } from './read-ahead';
import { MountWriteFile } from './write-file';
import type { MountStats } from './state';

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
/**
 * fuse-native hands utimens its times in whole milliseconds (tv_sec * 1000 + tv_nsec / 10^6), so
 * UTIME_NOW and UTIME_OMIT (tv_nsec 2^30 - 1 and 2^30 - 2, tv_sec 0) both arrive as 1073 ms. Taken as
 * "now": `touch f` is far more common than `touch -a f`, and no one sets a file to 1970-01-01 00:00:01.073.
 */
const UTIME_NOW_OR_OMIT_MS = 1073;
const O_ACCMODE = 3;
const O_RDONLY = 0;
const O_TRUNC = 0o1000;
const O_APPEND = 0o2000;
const TRACE_READS = process.env.TRIBUTARY_MOUNT_DEBUG === 'trace';
/** How long a read waits for the reads before it (see readInOrder). */
const READ_ORDER_WAIT_MS = 30;

/** What getattr answers (fuse-native's stat object; times in ms; sizes are plain numbers, exact to 2^53). */
export interface FuseStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  nlink: number;
  blksize: number;
  blocks: number;
  mtime: number;
  atime: number;
  ctime: number;
}

export interface FuseStatfs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  fsid: number;
  flag: number;
  namemax: number;
}

/**
 * A file open through the mount (what a local file system calls its inode): every descriptor on one
 * path shares it, so writes through one are seen by reads through another, and it follows the file
 * when it is renamed while open. libfuse itself hides a file unlinked while open (it renames it to
 * `.fuse_hidden…` and unlinks that at the last close), so unlinked files stay readable too.
 */
interface OpenFile {
  /** Remote path (changes when the file is renamed while open). */
  path: string;
  handles: Set<Handle>;
  /**
   * From the first open for writing until the last close: the file's content as the handles see
   * it. Reads of every handle go through it, so they see the writes.
   */
  content?: FileContent;
}

interface FileContent {
  /** The size getattr reports until the commit. */
  size: number;
  /**
   * The object is being replaced from offset 0 in order (a new file, or one truncated to 0 after
   * opening): the fast path, through `file`. Otherwise the file is changed in place through
   * `patch`.
   */
  rewrite: boolean;
  /** The fast path's buffered file (its upload session starts with the first bytes). */
  file?: BufferedFile;
  /** The fast path's remote side (it knows the committed entry after a one-request commit). */
  remote?: MountWriteFile;
  /**
   * Changes in place: writes at any offset, reads, truncation to any size, committed as a partial
   * update. A rewrite that gets a write out of order (or a truncation to another size, a read, a
   * rename, a flush) commits what it wrote in order, then goes on as a patch.
   */
  patch?: PatchFile;
  /** The entry when opened, or of the last commit (the version a patch starts from). */
  base?: EntryDto;
  /** A switch from rewrite to patch in progress (see toPatch). */
  switching?: Promise<void>;
  /** At least one write arrived. */
  written: boolean;
  /** The file's time until the commit (ms): its own when opened, or of the last write or truncation. */
  modifiedAt: number;
  /**
   * A file time or permission bits set while the file is open (tar and cp set them through the
   * descriptor before closing it): sent once the content is committed, so the commit's own "now"
   * does not overwrite them. A write after utimens clears the time (the write is the newer change).
   */
  attributes: FileAttributes;
  /** Attributes on their way to the site with a commit: still the file's until it answers. */
  sending?: FileAttributes;
}

interface Handle {
  fh: number;
  file: OpenFile;
  mode: 'read' | 'write';
  /** Opened with O_APPEND: every write goes to the end. */
  append: boolean;
  /**
   * Read handles while nobody writes the file: the catalog's version through the advance buffer,
   * opened at `readerPath` (reopened at the new path after a rename).
   */
  reader?: BufferedFile;
  readerPath?: string;
  /** Read handles: the size of the version they read. */
  size: number;
  /** Read handles of a small file read many to a request: its bytes (see ReadAhead). */
  data?: Buffer;
  /** Read handles: end of the last read handed to the buffer, and reads waiting for their turn. */
  dispatchedEnd: number;
  waiting: { position: number; start: () => void; timer: NodeJS.Timeout }[];
}

export interface NamespaceFsOptions {
  api: ApiConnection;
  /** The federation path shown at the mountpoint's root. */
  remoteRoot: string;
  cacheTtlMs: number;
  /** Largest read-ahead window / write part (the advance buffer's `bufferBytes`). */
  bufferBytes: number;
  /** Memory all open files share. */
  memoryLimitBytes?: number;
  /** Where the bytes written into existing objects wait for the commit (default: the OS's temp dir). */
  spillDir?: string;
  /** Retries of one remote call before the operation fails (short, so an outage shows as EIO quickly). */
  retry?: RetryPolicy;
  onReachability?(reachable: boolean, error?: string): void;
}

const MOUNT_RETRY: RetryPolicy = { retries: 2, baseDelayMs: 100, maxDelayMs: 1000 };

/**
 * The namespace as a file system: FUSE operations (path-based, as fuse-native hands them over)
 * mapped to the API. Reads and writes go through packages/buffer (one BufferedFile per open file,
 * prefetch and write-behind, sharing one memory limit). Attributes and listings are cached for
 * `cacheTtlMs` and dropped as soon as the change feed reports a change (see `cache`).
 *
 * Writing: a new file (create) or one truncated to zero is written sequentially from offset 0 and
 * becomes the object's new version when it is flushed (close): the fast path, one upload session
 * fed in order. An existing object opened without O_TRUNC is changed in place (see PatchFile):
 * writes at any offset, appends, truncation to any size; reads of the handle see its writes; the
 * changes are committed by flush, fsync and close as a partial update that sends only the
 * written ranges.
 */
export class NamespaceFs {
  readonly cache: MetadataCache;
  readonly remote: RemoteNamespace;
  readonly stats: MountStats = { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 };
  private readonly pool: AdvanceBufferPool;
  private readonly readAhead: ReadAhead;
  /** The small file opened last for reading (a scan of a folder in its listing's order starts batches). */
  private lastSmallOpen: { parent: string; name: string } | undefined;
  private readonly handles = new Map<number, Handle>();
  /** Open files by remote path. */
  private readonly files = new Map<string, OpenFile>();
  /**
   * Files whose last descriptor is released but whose content is still being committed (the kernel
   * sends RELEASE after close(2) has returned): what they show, and what a chmod or utimens waits for.
   */
  private readonly closing = new Map<string, { content: FileContent; done: Promise<void> }>();
  private nextFh = 1;
  private reachable = true;
  private readonly uid = process.getuid?.() ?? 0;
  private readonly gid = process.getgid?.() ?? 0;
  private readonly retry: RetryPolicy;
  private readonly root: string;

  constructor(private readonly options: NamespaceFsOptions) {
    this.root = normalizePath(options.remoteRoot);
    this.cache = new MetadataCache(options.cacheTtlMs);
    this.remote = new RemoteNamespace(options.api);
    this.retry = options.retry ?? MOUNT_RETRY;
    this.readAhead = new ReadAhead(options.api);
    this.pool = new AdvanceBufferPool({
      bufferBytes: options.bufferBytes,
      memoryLimitBytes: options.memoryLimitBytes ?? Math.max(256 * 1024 * 1024, 8 * options.bufferBytes),
    });
  }

  get isReachable(): boolean {
    return this.reachable;
  }

  get openHandles(): number {
    return this.handles.size;
  }

  /** Files with at least one descriptor open (each once, however many descriptors share it). */
  get openFiles(): number {
    return this.files.size;
  }

  /** Local path (as FUSE gives it) to the federation path. */
  toRemote(local: string): string {
    if (local === '/' || local === '') return this.root;
    try {
      return this.root === '/' ? normalizePath(local) : normalizePath(this.root + local);
    } catch (err) {
      // A name the namespace refuses: the errno a local file system gives (not EIO).
      if (err instanceof PathError) {
        const tooLong =
          local.split('/').some((n) => Buffer.byteLength(n) > MAX_NAME_BYTES) ||
          Buffer.byteLength(this.root + local) > MAX_PATH_BYTES;
        throw new FsError(tooLong ? errno.ENAMETOOLONG : errno.EINVAL, err.message);
      }
      throw err;
    }
  }

  /** The site answered (or did not): reported to the mount's state. */
  setReachable(reachable: boolean, error?: string): void {
    if (this.reachable === reachable) return;
    this.reachable = reachable;
    // What was cached while the site was away may be stale.
    if (reachable) {
      this.cache.clear();
      this.readAhead.clear();
    }
    this.options.onReachability?.(reachable, error);
  }

  // ---- the operations (each returns a value or throws; the adapter turns throws into errnos) ----

  async getattr(local: string): Promise<FuseStat> {
    const path = this.toRemote(local);
    const content = this.files.get(path)?.content ?? this.closing.get(path)?.content;
    if (content) return this.contentStat(content);
    return this.toStat(await this.lookup(path));
  }

  async fgetattr(local: string, fh: number): Promise<FuseStat> {
    const content = this.handles.get(fh)?.file.content;
    if (content) return this.contentStat(content);
    return this.getattr(local);
  }

  async readdir(local: string): Promise<{ names: string[]; stats: FuseStat[] }> {
    const path = this.toRemote(local);
    let names = this.cache.listing(path);
    if (!names) {
      const epoch = this.cache.epoch;
      const children = await this.call(() => this.remote.children(path));
      this.cache.putListing(path, children, epoch);
      names = children.map((c) => c.name);
      const stats = children.map((c) => this.toStat(c));
      return this.withPending(path, names, stats);
    }
    const stats: FuseStat[] = [];
    for (const name of names) {
      const entry = this.cache.attr(joinPath(path, name));
      stats.push(entry ? this.toStat(entry) : this.fileStat(0, Date.now(), false));
    }
    return this.withPending(path, names, stats);
  }

  async open(local: string, flags: number): Promise<number> {
    const path = this.toRemote(local);
    const forWrite = (flags & O_ACCMODE) !== O_RDONLY;
    const append = (flags & O_APPEND) !== 0;
    const shared = this.shareOpen(path, flags);
    if (shared) return shared;
    const entry = await this.lookup(path);
    if (entry.kind === 'collection') throw new FsError(errno.EISDIR, `${path} is a collection`);
    // Another descriptor may have opened the file, or the last one closed it, while the lookup waited.
    const sharedNow = this.shareOpen(path, flags);
    if (sharedNow) return sharedNow;
    const file = this.files.get(path) ?? this.openFile(path);
    if (!forWrite) {
      const fh = this.addHandle(file, 'read', false);
      const handle = this.handle(fh);
      // The size is the catalog's: no HEAD request before the first read.
      handle.size = entry.size;
      if (entry.kind === 'object' && entry.size > 0 && entry.size <= SMALL_READ_BYTES)
        handle.data = await this.smallFile(entry);
      return fh;
    }
    // The kernel opens first and truncates afterwards (O_TRUNC arrives as ftruncate to 0).
    const truncating = (flags & O_TRUNC) !== 0;
    const rewrite = entry.size === 0 || truncating;
    // Opening for writing changes no time: until a write or a truncation, the file keeps its own.
    this.startContent(
      file,
      rewrite,
      rewrite ? 0 : entry.size,
      entry,
      truncating ? Date.now() : Date.parse(entry.mtime),
    );
    return this.addHandle(file, 'write', append);
  }

  /** create(2): `mode` is the new file's permission bits (the kernel has applied the umask). */
  create(local: string, mode = 0o644): number {
    const path = this.toRemote(local);
    const file = this.files.get(path) ?? this.openFile(path);
    this.startContent(file, true, 0, undefined, Date.now());
    // The default needs no request of its own.
    if ((mode & 0o7777) !== 0o644) file.content!.attributes.mode = mode & 0o7777;
    const fh = this.addHandle(file, 'write', false);
    // The parent's listing stays: the next name tar creates is answered from it, without a request.
    this.cache.forgetEntry(path);
    this.cache.childChanged(splitPath(path).parent);
    return fh;
  }

  async read(fh: number, buffer: Buffer, length: number, position: number): Promise<number> {
    const handle = this.handle(fh);
    const content = handle.file.content;
    if (content) {
      // Written through some descriptor: the bytes written, the base's elsewhere. A rewrite read
      // back commits what it wrote so far and goes on as a patch, which can read.
      if (!content.patch) await this.toPatch(content, handle.file.path);
      const patch = content.patch!;
      const data = await this.call(() => patch.read(position, length));
      buffer.set(data, 0);
      this.stats.bytesRead += data.length;
      return data.length;
    }
    const data = handle.data;
    if (data) {
      const n = Math.max(0, Math.min(length, data.length - position));
      if (n > 0) data.copy(buffer, 0, position, position + n);
      this.stats.bytesRead += n;
      return n;
    }
    // Straight into the kernel's buffer: no copy of our own per request.
    const n = await this.call(() => this.readInOrder(handle, position, buffer.subarray(0, length)));
    this.stats.bytesRead += n;
    return n;
  }

  /**
   * The kernel keeps several reads of one file in flight (async reads plus its own read-ahead),
   * and they reach us in any order; the advance buffer would take a read far past the previous one
   * for random access and drop its read-ahead. So a read beyond the last one handed to the buffer
   * waits (briefly) for the reads before it, and the buffer sees them in offset order. A read
   * nothing precedes (real random access) goes ahead after READ_ORDER_WAIT_MS.
   */
  private readInOrder(handle: Handle, position: number, target: Buffer): Promise<number> {
    const length = target.length;
    const reader = this.reader(handle);
    return new Promise<number>((resolve, reject) => {
      const arrived = Date.now();
      const start = (): void => {
        if (TRACE_READS)
          process.stderr.write(
            `read ${position} +${length} after ${handle.dispatchedEnd} waited ${Date.now() - arrived} ms\n`,
          );
        handle.dispatchedEnd = Math.max(handle.dispatchedEnd, position + length);
        reader.readInto(position, target).then(resolve, reject);
        this.releaseWaiting(handle);
      };
      if (position <= handle.dispatchedEnd) {
        start();
        return;
      }
      const waiter = {
        position,
        start,
        timer: setTimeout(() => {
          handle.waiting = handle.waiting.filter((w) => w !== waiter);
          start();
        }, READ_ORDER_WAIT_MS),
      };
      handle.waiting.push(waiter);
      handle.waiting.sort((a, b) => a.position - b.position);
    });
  }

  /**
   * A small file's bytes read many to a request: kept from an earlier batch, or read now with the
   * files listed after it in its folder when the file opened before it was the one listed before
   * it (tar -cf and cp -r open a folder's files in that order; a lone `cat` does not read the
   * folder ahead). Undefined (read as usual) otherwise, or when the batch failed.
   */
  private async smallFile(entry: EntryDto): Promise<Buffer | undefined> {
    const { parent, name } = splitPath(entry.path);
    const previous = this.lastSmallOpen;
    this.lastSmallOpen = { parent, name };
    const kept = this.readAhead.take(entry);
    if (kept) return kept;
    const names = this.cache.listing(parent);
    if (!names || previous?.parent !== parent) return undefined;
    const at = names.indexOf(name);
    // The small file listed before it (folders, links and large files in between are not opened).
    let before = at - 1;
    while (before >= 0 && !this.isSmallFile(joinPath(parent, names[before]!))) before--;
    if (before < 0 || names[before] !== previous.name) return undefined;
    const next: EntryDto[] = [];
    for (const n of names.slice(at + 1)) {
      const path = joinPath(parent, n);
      const e = this.cache.attr(path);
      if (e && !this.files.get(path)?.content) next.push(e);
      if (next.length >= 2 * BATCH_FILES) break;
    }
    // Alone, it is one request either way.
    if (next.length === 0) return undefined;
    return this.call(() => this.readAhead.read(entry, next));
  }

  private isSmallFile(path: string): boolean {
    const e = this.cache.attr(path);
    return e !== undefined && e.kind === 'object' && e.size > 0 && e.size <= SMALL_READ_BYTES;
  }

  /** A read handle's buffered file, (re)opened at the file's path (which a rename may have changed). */
  private reader(handle: Handle): BufferedFile {
    const path = handle.file.path;
    if (!handle.reader || handle.readerPath !== path) {
      void handle.reader?.close().catch(() => undefined);
      handle.reader = this.pool.open(
        ApiRemoteFile.forRead(this.options.api, path, handle.size, { retry: this.retry }),
      );
      handle.readerPath = path;
    }
    return handle.reader;
  }

  private releaseWaiting(handle: Handle): void {
    const next = handle.waiting[0];
    if (next && next.position <= handle.dispatchedEnd) {
      handle.waiting.shift();
      clearTimeout(next.timer);
      next.start();
    }
  }

  async write(fh: number, buffer: Buffer, length: number, position: number): Promise<number> {
    const handle = this.handle(fh);
    const content = handle.file.content;
    if (handle.mode !== 'write' || !content) throw new FsError(errno.EBADF, 'the file is open for reading');
    const path = handle.file.path;
    if (handle.append) position = content.size;
    if (content.switching || (content.rewrite && position !== content.size))
      await this.toPatch(content, path);
    const patch = content.patch;
    if (patch) {
      await this.call(() => patch.write(position, buffer.subarray(0, length)));
      content.size = patch.size;
      this.wrote(content);
      this.stats.bytesWritten += length;
      return length;
    }
    const file = this.rewriteFile(content, path);
    // The buffer copies the bytes before its promise settles, so the kernel's buffer can be reused.
    await this.call(() => file.write(position, buffer.subarray(0, length)));
    content.size = position + length;
    this.wrote(content);
    this.stats.bytesWritten += length;
    return length;
  }

  /**
   * close(2): whatever the file holds now is committed before close returns (close-to-open, as NFS
   * promises it), also when nothing was written: a new file then exists, an emptied one is empty.
   * The kernel calls this for every close of a duplicated descriptor (a shell's `> file` dups it and
   * closes the original before writing), so the file goes on as a patch of what was committed and a
   * later write through another descriptor makes the next version. Before, an unwritten handle was
   * left to release, which the kernel runs after close has returned: `: > f; echo new >> f` lost the
   * append to the empty object committed late.
   */
  async flush(fh: number): Promise<void> {
    const handle = this.handle(fh);
    const content = handle.file.content;
    if (handle.mode !== 'write' || !content) return;
    await this.commitContent(content, handle.file.path);
  }

  /** Everything the file holds is a version in the catalog, and the file goes on as a patch of it. */
  private async commitContent(content: FileContent, path: string): Promise<void> {
    if (!content.patch) await this.toPatch(content, path);
    const patch = content.patch!;
    if (patch.changed) await this.commitPatch(content, patch, path);
    await this.sendAttributes(content, path);
  }

  private async commitPatch(content: FileContent, patch: PatchFile, path: string): Promise<void> {
    const entry = await this.changeEntry(path, 'object', () =>
      this.withAttributes(content, (attributes) => this.call(() => patch.commit(attributes))),
    );
    if (entry) content.base = entry;
  }

  /**
   * The last close of a written file: what is not committed yet is (release comes after flush, so
   * normally nothing is left), and the file's temporary state is dropped.
   */
  private async closeContent(content: FileContent, path: string): Promise<void> {
    const patch = content.patch;
    if (patch) {
      try {
        await this.commitContent(content, path);
      } finally {
        await patch.close();
      }
      return;
    }
    const file = content.file;
    if (!content.rewrite || !file) return;
    const remote = content.remote;
    // Known without asking: the next lookup of the file (cp's fstat, ls) needs no request.
    await this.changeEntry(path, 'object', async () => {
      await this.withAttributes(content, (attributes) => {
        if (remote) remote.attributes = attributes;
        return this.call(() => file.close());
      });
      return remote?.entry;
    });
    await this.sendAttributes(content, path);
  }

  /** A write arrived: the file's time is now (a time set earlier through utimens is older). */
  private wrote(content: FileContent): void {
    content.written = true;
    content.modifiedAt = Date.now();
    content.attributes.mtime = undefined;
  }

  /**
   * A rewrite that is no longer sequential (a write elsewhere than at its end, a truncation to
   * another size, a read, a rename, a flush) goes on as a patch: what it wrote in order is committed
   * first (for a new file, an empty object), and the patch starts from that version. An existing
   * object truncated to 0 on opening that has not been written starts from the old version, with
   * none of it visible.
   */
  private toPatch(content: FileContent, path: string): Promise<void> {
    // A read and a write may both find the rewrite out of order: one switch for both.
    content.switching ??= this.switchToPatch(content, path).finally(() => (content.switching = undefined));
    return content.switching;
  }

  private async switchToPatch(content: FileContent, path: string): Promise<void> {
    if (content.patch) return;
    let base = content.base;
    let visibleBase = 0;
    if (content.written || !base) {
      const file = this.rewriteFile(content, path);
      const remote = content.remote!;
      const committed = await this.changeEntry(path, 'object', async () => {
        await this.withAttributes(content, (attributes) => {
          remote.attributes = attributes;
          return this.call(() => file.close());
        });
        return remote.entry;
      });
      content.file = undefined;
      base = committed ?? (await this.lookup(path));
      visibleBase = content.size;
    } else {
      // Never written: nothing was sent, and closing it would replace the object with nothing.
      content.file = undefined;
    }
    content.remote = undefined;
    content.rewrite = false;
    content.base = base;
    content.patch = this.newPatch(path, base, content.size, visibleBase);
  }

  private newPatch(path: string, base: EntryDto, size: number, visibleBase: number): PatchFile {
    return new PatchFile({
      api: this.options.api,
      path,
      base: { version: base.version ?? 1, sha256: base.checksum ?? '', size: base.size },
      pool: this.pool,
      retry: this.retry,
      size,
      visibleBase,
      spillDir: this.options.spillDir,
    });
  }

  /** The fast path's buffered file (opened when the file starts replacing the object). */
  private rewriteFile(content: FileContent, path: string): BufferedFile {
    if (!content.file) {
      const remote = new MountWriteFile(this.options.api, path, this.retry);
      content.file = this.pool.open(remote);
      content.remote = remote;
    }
    return content.file;
  }

  /** fsync(2): a patch is committed (a new version); a rewrite's parts are sent and acknowledged. */
  async fsync(fh: number): Promise<void> {
    const handle = this.handle(fh);
    const content = handle.file.content;
    if (handle.mode !== 'write' || !content) return;
    if (content.patch) return this.commitContent(content, handle.file.path);
    const file = content.file;
    if (file) await this.call(() => file.fsync());
  }

  /**
   * A descriptor on a file open with its content in the mount (perhaps not in the catalog yet):
   * shared with the other descriptors. Undefined when the file has no content here.
   */
  private shareOpen(path: string, flags: number): Promise<number> | undefined {
    const open = this.files.get(path);
    const content = open?.content;
    if (!open || !content) return undefined;
    const forWrite = (flags & O_ACCMODE) !== O_RDONLY;
    const fh = this.addHandle(open, forWrite ? 'write' : 'read', (flags & O_APPEND) !== 0);
    if (!forWrite || (flags & O_TRUNC) === 0) return Promise.resolve(fh);
    return this.resize(content, path, 0).then(() => fh);
  }

  async release(fh: number): Promise<void> {
    const handle = this.handles.get(fh);
    if (!handle) return;
    this.handles.delete(fh);
    for (const w of handle.waiting) clearTimeout(w.timer);
    await handle.reader?.close().catch(() => undefined);
    const file = handle.file;
    file.handles.delete(handle);
    if (file.handles.size > 0) return;
    if (this.files.get(file.path) === file) this.files.delete(file.path);
    const content = file.content;
    if (!content) return;
    const path = file.path;
    const closing = { content, done: this.closeContent(content, path) };
    closing.done.catch(() => undefined);
    this.closing.set(path, closing);
    try {
      await closing.done;
    } finally {
      if (this.closing.get(path) === closing) this.closing.delete(path);
    }
  }

  async truncate(local: string, size: number): Promise<void> {
    const path = this.toRemote(local);
    const content = this.files.get(path)?.content;
    if (content) return this.resize(content, path, size);
    const entry = await this.lookup(path);
    if (entry.kind === 'collection') throw new FsError(errno.EISDIR, `${path} is a collection`);
    if (size === entry.size) return;
    if (size === 0) {
      await this.changeEntry(path, 'object', () => this.call(() => this.remote.putEmpty(path)));
      return;
    }
    // Another size: a partial update with nothing but the new size (no bytes sent).
    const patch = this.newPatch(path, entry, entry.size, entry.size);
    try {
      await patch.resize(size);
      await this.changeEntry(path, 'object', () => this.call(() => patch.commit()));
    } finally {
      await patch.close();
    }
  }

  async ftruncate(fh: number, size: number): Promise<void> {
    const handle = this.handle(fh);
    const content = handle.file.content;
    if (content) return this.resize(content, handle.file.path, size);
    await this.truncate(this.localOf(handle.file.path), size);
  }

  /**
   * A truncation of an open file. To 0 on a file that has sent nothing starts replacing the object
   * (the fast path: `>` opens, then truncates); any other size goes through a patch.
   */
  private async resize(content: FileContent, path: string, size: number): Promise<void> {
    if (size === content.size) return;
    // A change of size is a change of the file: its time is now (a time set earlier is older).
    content.modifiedAt = Date.now();
    content.attributes.mtime = undefined;
    if (size === 0 && !content.file && content.patch?.entry === undefined) {
      await content.patch?.close();
      content.patch = undefined;
      content.rewrite = true;
      content.size = 0;
      content.written = false;
      // Closed without a write, it commits an empty object, as `> file` does.
      this.rewriteFile(content, path);
      return;
    }
    if (!content.patch) await this.toPatch(content, path);
    await content.patch!.resize(size);
    content.size = size;
  }

  /**
   * utimens(2): the file time (the catalog's `mtime`; atime is not kept). On a file open with content
   * it waits for the commit (see FileContent.attributes); otherwise it is set at once.
   */
  async utimens(local: string, mtimeMs: number): Promise<void> {
    const mtime = mtimeMs === UTIME_NOW_OR_OMIT_MS ? Date.now() : mtimeMs;
    await this.setAttributes(this.toRemote(local), { mtime });
  }

  /** chmod(2): the permission bits (advisory: the catalog's grants decide access). */
  async chmod(local: string, mode: number): Promise<void> {
    await this.setAttributes(this.toRemote(local), { mode: mode & 0o7777 });
  }

  /**
   * chown(2): accepted and ignored. Files belong to catalog users, not to this machine's uids, and
   * every file shows as the mount's user; refusing (EPERM) would make `tar` and `rsync -a` run as
   * root fail on every file. The entry must exist.
   */
  async chown(local: string): Promise<void> {
    const path = this.toRemote(local);
    if (!this.files.get(path)?.content) await this.lookup(path);
  }

  private async setAttributes(path: string, attributes: FileAttributes): Promise<void> {
    const content = this.files.get(path)?.content;
    if (content) {
      Object.assign(content.attributes, attributes);
      return;
    }
    // A file being released: after its last commit, so that this change is the later one.
    await this.closing.get(path)?.done.catch(() => undefined);
    const before = await this.lookup(path);
    if (before.kind === 'collection') {
      await this.changeEntry(path, 'collection', () =>
        this.call(() => this.remote.setAttributes(path, attributes)),
      );
      // A time set on a directory is its time from now on, also before later child changes.
      if (attributes.mtime !== undefined) this.cache.forgetChildChanges(path);
      return;
    }
    await this.changeEntry(path, 'object', () =>
      this.call(() => this.remote.setAttributes(path, attributes)),
    );
  }

  /**
   * Runs a commit that carries the attributes set while the file was open, so that they arrive with
   * the new version: a separate change right after it would meet it as a concurrent update where
   * another site holds the bytes (docs/attributes.md). Kept for the next commit if it fails.
   */
  private async withAttributes<T>(
    content: FileContent,
    commit: (attributes: FileAttributes) => Promise<T>,
  ): Promise<T> {
    const attributes = content.attributes;
    content.attributes = {};
    content.sending = attributes;
    try {
      return await commit(attributes);
    } catch (err) {
      content.attributes = { ...attributes, ...content.attributes };
      throw err;
    } finally {
      content.sending = undefined;
    }
  }

  /** Attributes set while the file was open and not sent with a commit (nothing else changed). */
  private async sendAttributes(content: FileContent, path: string): Promise<void> {
    const { mtime, mode } = content.attributes;
    if (mtime === undefined && mode === undefined) return;
    content.base = await this.changeEntry(path, 'object', () =>
      this.withAttributes(content, (attributes) =>
        this.call(() => this.remote.setAttributes(path, attributes)),
      ),
    );
  }

  /** readlink(2): a symbolic link's target, exactly as it was written. */
  async readlink(local: string): Promise<string> {
    const path = this.toRemote(local);
    const entry = await this.lookup(path);
    if (entry.kind !== 'symlink' || entry.linkTarget === null)
      throw new FsError(errno.EINVAL, `${path} is not a symbolic link`);
    return entry.linkTarget;
  }

  /** symlink(2): a catalog entry holding `target` as written; the site never follows it. */
  async symlink(target: string, local: string): Promise<void> {
    const path = this.toRemote(local);
    if (target.length === 0) throw new FsError(errno.ENOENT, 'a symbolic link needs a target');
    if (Buffer.byteLength(target) > MAX_PATH_BYTES)
      throw new FsError(errno.ENAMETOOLONG, `a symbolic link's target is at most ${MAX_PATH_BYTES} bytes`);
    await this.changeEntry(path, 'object', () => this.call(() => this.remote.symlink(path, target)));
    this.cache.childChanged(splitPath(path).parent);
  }

  /** link(2): hard links are not supported (an entry has one name); EPERM, as on file systems without them. */
  link(): never {
    throw new FsError(errno.EPERM, 'hard links are not supported: use a symbolic link or a copy');
  }

  /** mknod(2) (fifos, devices, sockets): not catalog entries; EPERM. */
  mknod(): never {
    throw new FsError(
      errno.EPERM,
      'special files (fifos, devices, sockets) cannot be stored in the namespace',
    );
  }

  async unlink(local: string): Promise<void> {
    const path = this.toRemote(local);
    const entry = await this.lookup(path);
    if (entry.kind === 'collection') throw new FsError(errno.EISDIR, `${path} is a collection`);
    await this.removeEntry(path, 'object');
  }

  async mkdir(local: string, mode = 0o755): Promise<void> {
    const path = this.toRemote(local);
    const epoch = this.cache.epoch;
    // A new collection is empty: the names tar creates in it are answered without a request.
    await this.changeEntry(
      path,
      'collection',
      () => this.call(() => this.remote.mkdir(path, mode & 0o7777)),
      (entry) => this.cache.createdHere(entry, epoch),
    );
    this.cache.childChanged(splitPath(path).parent);
  }

  async rmdir(local: string): Promise<void> {
    const path = this.toRemote(local);
    const entry = await this.lookup(path);
    if (entry.kind !== 'collection') throw new FsError(errno.ENOTDIR, `${path} is not a collection`);
    if (path === this.root) throw new FsError(errno.EPERM, 'the mount root cannot be removed');
    const children = await this.call(() => this.remote.children(path));
    if (children.length > 0) throw new FsError(errno.ENOTEMPTY, `${path} is not empty`);
    await this.removeEntry(path, 'collection');
  }

  /**
   * rename(2): an existing target is replaced (an object, or an empty collection), as POSIX says.
   * Files open below the source follow it: what they wrote in order is committed first (so the
   * object exists to be moved), and their reads and commits go to the new path afterwards. (A target
   * that is open was already moved aside by libfuse, which hides open files instead of removing them.)
   */
  async rename(localFrom: string, localTo: string): Promise<void> {
    const from = this.toRemote(localFrom);
    const to = this.toRemote(localTo);
    const moving = [...this.files.values()].filter((f) => f.path === from || f.path.startsWith(from + '/'));
    for (const file of moving)
      if (file.content && !file.content.patch) await this.toPatch(file.content, file.path);
    const source = await this.lookup(from);
    const target = await this.lookup(to).catch((err: unknown) => {
      if (err instanceof FsError && err.errno === errno.ENOENT) return undefined;
      throw err;
    });
    if (target) {
      if (target.kind === 'collection') {
        if (source.kind !== 'collection') throw new FsError(errno.EISDIR, `${to} is a collection`);
        const children = await this.call(() => this.remote.children(to));
        if (children.length > 0) throw new FsError(errno.ENOTEMPTY, `${to} is not empty`);
      } else if (source.kind === 'collection') {
        throw new FsError(errno.ENOTDIR, `${to} is not a collection`);
      }
      await this.call(() => this.remote.remove(to));
      this.cache.invalidateTree(to);
    }
    await this.call(() => this.remote.move(from, to));
    this.cache.invalidateTree(from);
    this.cache.invalidateTree(to);
    this.cache.childChanged(splitPath(from).parent);
    this.cache.childChanged(splitPath(to).parent);
    for (const file of moving) {
      // Its last descriptor was released meanwhile: it stays closed (the release commits it).
      if (this.files.get(file.path) !== file) continue;
      this.files.delete(file.path);
      file.path = to + file.path.slice(from.length);
      this.files.set(file.path, file);
      await file.content?.patch?.rename(file.path);
    }
  }

  statfs(): FuseStatfs {
    // The namespace has no fixed capacity: report 1 PiB in 1 MiB blocks, all free.
    const blocks = 2 ** 30;
    return {
      bsize: 1024 * 1024,
      frsize: 1024 * 1024,
      blocks,
      bfree: blocks,
      bavail: blocks,
      files: 2 ** 31,
      ffree: 2 ** 31,
      favail: 2 ** 31,
      fsid: 0x7472_6962,
      flag: 0,
      namemax: 255,
    };
  }

  /** Closes every open file (aborting unfinished writes): the mount is going away. */
  async closeAll(): Promise<void> {
    const handles = [...this.handles.values()];
    const files = [...this.files.values()];
    this.handles.clear();
    this.files.clear();
    // Uncommitted changes of a patch are dropped; a rewrite's file is closed as before.
    await Promise.all([
      ...handles.map((h) => h.reader?.close().catch(() => undefined)),
      ...files.map(async (f) => {
        await f.content?.patch?.close();
        await f.content?.file?.close().catch(() => undefined);
      }),
    ]);
  }

  // ---- helpers ----

  /**
   * A change this mount makes to the entry at `path` (a commit, its attributes, a new symbolic link,
   * a new folder): the change feed's echo of it is not applied, and the entry the site answered is
   * recorded (`record`; by default cached, its name added to the parent's listing). Without an
   * answered entry, or when the change fails (the site may have made it all the same, and its echo
   * may have been taken already), what is cached about the entry and its parent's listing is dropped.
   */
  private async changeEntry<T extends EntryDto | undefined>(
    path: string,
    kind: 'object' | 'collection',
    op: () => Promise<T>,
    record: (entry: EntryDto) => void = (entry) => this.cache.changedHere(entry),
  ): Promise<T> {
    const echo = this.cache.expectEcho(this.parentOf(path), kind, kind === 'collection' ? path : undefined);
    let entry: T;
    try {
      entry = await op();
    } catch (err) {
      echo.cancel();
      this.cache.invalidateEntry(path);
      throw err;
    }
    if (entry) {
      echo.answered();
      record(entry);
    } else {
      echo.cancel();
      this.cache.invalidateEntry(path);
    }
    return entry;
  }

  /** unlink, rmdir: moved to the trash; its echo is not applied, its name leaves the parent's listing. */
  private async removeEntry(path: string, kind: 'object' | 'collection'): Promise<void> {
    const parent = this.parentOf(path);
    const echo = this.cache.expectEcho(parent, kind, kind === 'collection' ? path : undefined);
    try {
      await this.call(() => this.remote.remove(path));
    } catch (err) {
      echo.cancel();
      this.cache.invalidateTree(path);
      throw err;
    }
    echo.answered();
    this.cache.removedHere(path);
    this.cache.childChanged(parent);
  }

  private parentOf(path: string): string {
    return path === '/' ? '/' : splitPath(path).parent;
  }

  /**
   * Runs a remote call, keeping track of whether the site answers. Only an answer heard from the
   * site counts as reachable: some calls end without asking it (closing a file whose commit failed).
   */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    const heard = this.options.api.lastHeard;
    try {
      const value = await op();
      if (this.options.api.lastHeard > heard) this.setReachable(true);
      return value;
    } catch (err) {
      if (isUnreachable(err)) this.setReachable(false, (err as Error).message);
      else if (!(err instanceof FsError)) this.setReachable(true);
      throw err;
    }
  }

  /** The entry at a remote path: from the cache, or ENOENT from a fresh listing of its parent, or a stat. */
  private async lookup(path: string): Promise<EntryDto> {
    const cached = this.cache.attr(path);
    if (cached) return cached;
    if (path !== '/') {
      const { parent, name } = splitPath(path);
      const siblings = this.cache.listing(parent);
      if (siblings && !siblings.includes(name)) throw new FsError(errno.ENOENT, `${path} does not exist`);
    }
    const epoch = this.cache.epoch;
    try {
      const entry = await this.call(() => this.remote.stat(path));
      this.cache.putAttr(entry, epoch);
      return entry;
    } catch (err) {
      throw new FsError(toErrno(err), (err as Error).message);
    }
  }

  private openFile(path: string): OpenFile {
    const file: OpenFile = { path, handles: new Set() };
    this.files.set(path, file);
    return file;
  }

  /**
   * The file becomes writable: replaced from offset 0 (`rewrite`), or changed in place from `base`.
   * A file that already has content (another descriptor writes it) keeps it.
   */
  private startContent(
    file: OpenFile,
    rewrite: boolean,
    size: number,
    base: EntryDto | undefined,
    modifiedAt: number,
  ): void {
    if (file.content) return;
    const content: FileContent = {
      size,
      rewrite,
      base,
      written: false,
      modifiedAt,
      attributes: {},
    };
    file.content = content;
    if (rewrite) this.rewriteFile(content, file.path);
    else if (base) content.patch = this.newPatch(file.path, base, size, size);
  }

  private addHandle(file: OpenFile, mode: 'read' | 'write', append: boolean): number {
    let fh = this.nextFh;
    while (this.handles.has(fh) || fh === 0) fh = (fh + 1) >>> 0;
    this.nextFh = (fh + 1) >>> 0;
    const handle: Handle = { fh, file, mode, append, size: 0, dispatchedEnd: 0, waiting: [] };
    this.handles.set(fh, handle);
    file.handles.add(handle);
    return fh;
  }

  private handle(fh: number): Handle {
    const handle = this.handles.get(fh);
    if (!handle) throw new FsError(errno.EBADF, `no open file ${fh}`);
    return handle;
  }

  private withPending(
    path: string,
    names: string[],
    stats: FuseStat[],
  ): { names: string[]; stats: FuseStat[] } {
    for (const file of this.files.values()) {
      const content = file.content;
      if (!content || file.path === '/' || splitPath(file.path).parent !== path) continue;
      const name = splitPath(file.path).name;
      if (!names.includes(name)) {
        names = [...names, name];
        stats = [...stats, this.contentStat(content)];
      }
    }
    return { names, stats };
  }

  private localOf(remote: string): string {
    if (this.root === '/') return remote;
    return remote === this.root ? '/' : remote.slice(this.root.length);
  }

  /**
   * An entry's attributes. The permission bits are the catalog's (chmod sets them), less what the
   * caller's access rules out: without write access no write bits, without read access no read
   * bits, so `ls -l` and programs that look before they write see what the site will allow.
   */
  private toStat(entry: EntryDto): FuseStat {
    const mtime = Date.parse(entry.mtime);
    const ctime = Date.parse(entry.modifiedAt);
    if (entry.kind === 'symlink') return this.stat(S_IFLNK | 0o777, entry.size, mtime, ctime, 1);
    let bits = entry.mode & 0o7777;
    if (entry.access !== 'write' && entry.access !== 'own') bits &= ~0o222;
    if (entry.access === null) bits &= ~0o444;
    if (entry.kind === 'collection') {
      // Entries created, removed or renamed in it since (the catalog does not change the collection).
      const child = this.cache.childChangedAt(entry.path) ?? 0;
      return this.stat(S_IFDIR | bits, 0, Math.max(mtime, child), Math.max(ctime, child), 2);
    }
    return this.stat(S_IFREG | bits, entry.size, mtime, ctime, 1);
  }

  /** A file open with content in the mount: its size and times so far, the bits it will have. */
  private contentStat(content: FileContent): FuseStat {
    const bits = content.attributes.mode ?? content.sending?.mode ?? content.base?.mode ?? 0o644;
    const mtime = content.attributes.mtime ?? content.sending?.mtime ?? content.modifiedAt;
    return this.stat(S_IFREG | bits, content.size, mtime, Math.max(mtime, content.modifiedAt), 1);
  }

  /** Listed, but its attributes are not cached (dropped since): a plain file until asked again. */
  private fileStat(size: number, time: number, writable: boolean): FuseStat {
    return this.stat(S_IFREG | (writable ? 0o644 : 0o444), size, time, time, 1);
  }

  private stat(mode: number, size: number, mtime: number, ctime: number, nlink: number): FuseStat {
    return {
      mode,
      uid: this.uid,
      gid: this.gid,
      size,
      nlink,
      blksize: 128 * 1024,
      blocks: Math.ceil(size / 512),
      mtime,
      atime: mtime,
      ctime: Math.max(ctime, mtime),
    };
  }
}
