import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ApiConnection, UploadSessionClient } from '@tributary/buffer';
import { normalizePath } from '@tributary/shared';
import { agentHome } from '../agent-home';
import { fuseAvailability, loadFuseAddon } from './availability';
import { ChangeFeed } from './change-feed';
import { NamespaceFs } from './filesystem';
import { removeStaleSpills } from './patch-file';
import { errno, toErrno } from './remote';
import { newMountId, removeMountState, writeMountState, type MountState, type MountStatus } from './state';
import { UploadLedger } from './upload-record';

const MiB = 1024 * 1024;

/** Default metadata timeout: a stat, a listing, opening an upload session (docs/mount.md, "Bounded waits"). */
export const DEFAULT_METADATA_TIMEOUT_MS = 5_000;
/** Default data timeout: the longest time a transfer may make no progress. */
export const DEFAULT_DATA_TIMEOUT_MS = 30_000;
/**
 * An operation is answered ETIMEDOUT by the mount itself once the site has been silent this much
 * longer than the longer timeout (a safety net: every request has its own timeout, shorter).
 */
export const OPERATION_SILENCE_MARGIN_MS = 5_000;
/**
 * fuse-native's own timer (its `timeout` option): the last resort for an operation that has not
 * ended although the site keeps answering. Operations on a silent site end well before (see above);
 * one the site works on can take long (a change in place to a file of hundreds of GiB is composed
 * by the site at disk speed).
 */
export const OPERATION_LIMIT_MS = 10 * 60_000;

/** The timeouts in force for a mount: the options' or the defaults. */
export function mountTimeouts(options: Pick<MountOptions, 'metadataTimeoutMs' | 'dataTimeoutMs'>): {
  metadataMs: number;
  dataMs: number;
} {
  return {
    metadataMs: options.metadataTimeoutMs ?? DEFAULT_METADATA_TIMEOUT_MS,
    dataMs: options.dataTimeoutMs ?? DEFAULT_DATA_TIMEOUT_MS,
  };
}

export interface MountOptions {
  /** The site's base URL. */
  site: string;
  token: string;
  /** The federation path to mount ('/' for the whole namespace). */
  remote: string;
  /** Local directory (created if missing). */
  mountpoint: string;
  /** Largest read-ahead window / write part, MiB (default 32). */
  bufferMiB?: number;
  /** How long attributes and listings are kept without a change-feed notice (default 3000 ms). */
  cacheTtlMs?: number;
  /**
   * How long a metadata request (stat, listing) may take, and how long the site may stay silent
   * while it works on a change (default 5000 ms).
   */
  metadataTimeoutMs?: number;
  /** How long a transfer may make no progress (default 30000 ms). */
  dataTimeoutMs?: number;
  /** Where the state file goes (default agentHome()). */
  home?: string;
  /** Interval of the state file's refresh (default 2000 ms). */
  stateIntervalMs?: number;
}

export interface MountHandle {
  readonly id: string;
  readonly mountpoint: string;
  readonly fs: NamespaceFs;
  state(): MountState;
  /** Unmounts, closes open files, removes the state file. */
  unmount(): Promise<void>;
}

export class FuseUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FuseUnavailableError';
  }
}

/** The mount options libfuse 2.9 gets: large requests (see docs/mount.md). */
export const FUSE_EXTRA_OPTIONS = ['big_writes', 'max_write=1048576'];

/** The part of fuse-native's API used here (its own types are loose). */
interface FuseInstance {
  mount(cb: (err: Error | null) => void): void;
  unmount(cb: (err: Error | null) => void): void;
}
type FuseConstructor = new (
  mnt: string,
  ops: Record<string, unknown>,
  opts: Record<string, unknown>,
) => FuseInstance;

/**
 * A subclass of fuse-native's Fuse whose option builder adds what the wrapper does not expose:
 * `big_writes` and `max_write` (writes arrive in 128 KiB requests instead of 4 KiB).
 */
function bigRequestFuse(): FuseConstructor {
  const Fuse = loadFuseAddon() as FuseConstructor & { prototype: { _fuseOptions(): string } };
  class BigRequestFuse extends (Fuse as unknown as new (...args: unknown[]) => { _fuseOptions(): string }) {
    override _fuseOptions(): string {
      const base = super._fuseOptions();
      const extra = FUSE_EXTRA_OPTIONS.join(',');
      return base ? `${base},${extra}` : `-o${extra}`;
    }
  }
  return BigRequestFuse as unknown as FuseConstructor;
}

type Callback = (code: number, ...values: unknown[]) => void;

/**
 * Mounts `remote` at `mountpoint` in this process. Must run in a process of its own (the agent
 * spawns `dist/mount/main.js`): a process that touches its own mount synchronously deadlocks.
 */
export async function mountNamespace(options: MountOptions): Promise<MountHandle> {
  const availability = await fuseAvailability();
  if (!availability.available) throw new FuseUnavailableError(availability.reason ?? 'FUSE is not available');
  const home = options.home ?? agentHome();
  const remote = normalizePath(options.remote);
  const mountpoint = path.resolve(options.mountpoint);
  const site = options.site.replace(/\/+$/, '');
  const timeouts = mountTimeouts(options);
  const now = new Date().toISOString();
  const state: MountState = {
    id: newMountId(),
    pid: process.pid,
    mountpoint,
    remote,
    site,
    state: 'mounting',
    startedAt: now,
    updatedAt: now,
    stats: { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 },
  };
  let writing: Promise<void> = Promise.resolve();
  let stopped = false;
  const save = (): Promise<void> => {
    state.updatedAt = new Date().toISOString();
    const snapshot: MountState = { ...state, stats: { ...state.stats } };
    writing = writing
      .then(() => (stopped ? undefined : writeMountState(home, snapshot)))
      .catch(() => undefined);
    return writing;
  };
  const setState = (next: MountStatus, error?: string): void => {
    if (error !== undefined) state.lastError = error;
    if (state.state === next) return;
    state.state = next;
    void save();
  };
  await save();
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  // The upload sessions this mount opens, on disk next to its state file (crash recovery).
  const ledger = new UploadLedger(home, state.id, site, (err) =>
    log(`recording upload sessions in ${ledger.file} failed: ${(err as Error).message}`),
  );
  const api = new ApiConnection({ baseUrl: site, token: options.token, timeouts, uploadSessions: ledger });
  const sessions = new UploadSessionClient(api);

  // Dirty bytes a dead mount never committed are lost (docs/mount.md); their files need not stay.
  await removeStaleSpills().catch(() => 0);
  const fs = new NamespaceFs({
    api,
    remoteRoot: remote,
    cacheTtlMs: options.cacheTtlMs ?? 3000,
    bufferBytes: (options.bufferMiB ?? 32) * MiB,
    onReachability: (reachable, error) => report(reachable, error),
  });
  /**
   * The state the file system's calls suggest, checked against what the connection heard: once the
   * site is unreachable, only an answer from it ends that (an operation can end well without
   * asking it, e.g. closing a file whose commit already failed). `outageHeard`: the connection's
   * `lastHeard` when the outage began; undefined while the site answers.
   */
  let outageHeard: number | undefined;
  const report = (reachable: boolean, error?: string): void => {
    if (!reachable) {
      outageHeard ??= api.lastHeard;
      setState('unreachable', error);
      // Ask at once whether the site is there (one request may have been slow while it lives).
      probeNow();
      return;
    }
    if (outageHeard !== undefined && api.lastHeard <= outageHeard) {
      probeNow();
      return;
    }
    outageHeard = undefined;
    setState('mounted');
  };
  state.stats = fs.stats;

  try {
    // A wrong URL, token or path fails here, before anything is mounted.
    const root = await fs.remote.stat(remote);
    if (root.kind !== 'collection') throw new Error(`${remote} is not a collection`);
  } catch (err) {
    setState('failed', (err as Error).message);
    await save();
    throw err;
  }

  // Sessions a crashed mount of this site left open are removed from the site (in the background).
  const sweep = (reason: string): void => {
    void ledger.sweep(sessions).then(({ removed, left }) => {
      if (removed > 0 || left > 0)
        log(`removed ${removed} upload session(s) ${reason}${left > 0 ? `; ${left} left for later` : ''}`);
    });
  };
  if ((await ledger.adoptLeftovers().catch(() => 0)) > 0)
    sweep('left open by a mount that stopped without ending them');

  const feed = new ChangeFeed({
    baseUrl: site,
    token: options.token,
    path: remote,
    connectTimeoutMs: timeouts.metadataMs,
    onChange: (change) => fs.cache.apply(change),
    onResync: () => fs.cache.clear(),
    onConnected: (connected) => {
      fs.cache.setLive(connected);
      if (connected) {
        fs.setReachable(true);
        report(true);
      }
    },
  });
  // While the site is unreachable (or the change feed is down, or a request timed out), probe it
  // every second: an answer ends the outage, silence with the feed down begins one. Each probe
  // waits at most the metadata timeout.
  let probing = false;
  let ticks = 0;
  const probeNow = (): void => {
    if (probing || stopped) return;
    probing = true;
    void fs.remote
      .health()
      .then((ok) => {
        if (ok) {
          fs.setReachable(true);
          report(true);
        } else if (outageHeard === undefined && (!feed.isConnected || api.unreachable)) {
          const reason = api.unreachable?.message ?? 'the site does not answer its health check';
          fs.setReachable(false, reason);
          report(false, reason);
        }
      })
      .finally(() => (probing = false));
  };
  const probe = setInterval(() => {
    ticks++;
    if (outageHeard !== undefined || !fs.isReachable || !feed.isConnected || api.unreachable) probeNow();
    // Sessions abandoned during an outage are removed once the site answers.
    else if (ticks % 5 === 0 && ledger.abandonedCount > 0) sweep('abandoned by writes that failed');
  }, 1000);
  const refresh = setInterval(() => void save(), options.stateIntervalMs ?? 2000);

  const FuseClass = bigRequestFuse();
  const debug = process.env.TRIBUTARY_MOUNT_DEBUG === '1';
  const trace = process.env.TRIBUTARY_MOUNT_DEBUG === 'trace';
  // Operations in progress. Every request to the site has a timeout, so an operation ends soon
  // after the site goes silent; should one not, this answers it ETIMEDOUT once the site has been
  // silent for longer than any timeout (its later result is then dropped).
  const inFlight = new Set<{ name: string; started: number; answer: (code: number) => void }>();
  const silenceLimitMs = Math.max(timeouts.metadataMs, timeouts.dataMs) + OPERATION_SILENCE_MARGIN_MS;
  const watchdog = setInterval(() => {
    const t = performance.now();
    if (inFlight.size === 0 || t - api.lastHeard < silenceLimitMs) return;
    for (const op of inFlight) {
      if (t - op.started < silenceLimitMs) continue;
      fs.stats.errors++;
      if (debug || trace)
        process.stderr.write(
          `${op.name}: answered ETIMEDOUT, the site has been silent for ${silenceLimitMs} ms\n`,
        );
      op.answer(errno.ETIMEDOUT);
    }
  }, 1000);
  const run = (name: string, cb: Callback, op: () => unknown, shape: 'value' | 'count' = 'value'): void => {
    fs.stats.operations++;
    const started = performance.now();
    const kernel = cb;
    const entry = { name, started, answer: (code: number) => cb(code) };
    let answered = false;
    cb = (code, ...values) => {
      // Once: the safety net above may have answered already.
      if (answered) return;
      answered = true;
      inFlight.delete(entry);
      if (trace) process.stderr.write(`${name} ${code} ${(performance.now() - started).toFixed(1)} ms\n`);
      kernel(code, ...values);
    };
    inFlight.add(entry);
    Promise.resolve()
      .then(op)
      .then(
        (value) => {
          if (shape === 'count') cb(value as number);
          else if (value === undefined) cb(0);
          else cb(0, value);
        },
        (err: unknown) => {
          fs.stats.errors++;
          const code = toErrno(err);
          if ((debug || trace) && code !== errno.ENOENT)
            process.stderr.write(`${name}: ${code} ${(err as Error).message}\n`);
          cb(code);
        },
      );
  };
  const ops: Record<string, unknown> = {
    init: (cb: Callback) => cb(0),
    getattr: (p: string, cb: Callback) => run('getattr', cb, () => fs.getattr(p)),
    fgetattr: (p: string, fd: number, cb: Callback) => run('fgetattr', cb, () => fs.fgetattr(p, fd)),
    readdir: (p: string, cb: Callback) =>
      run(
        'readdir',
        (code, value) => {
          const listing = value as { names: string[]; stats: unknown[] } | undefined;
          if (code !== 0 || !listing) cb(code);
          else cb(0, listing.names, listing.stats);
        },
        () => fs.readdir(p),
      ),
    open: (p: string, flags: number, cb: Callback) => run('open', cb, () => fs.open(p, flags)),
    create: (p: string, mode: number, cb: Callback) => run('create', cb, () => fs.create(p, mode)),
    read: (_p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Callback) =>
      run('read', cb, () => fs.read(fd, buf, len, pos), 'count'),
    write: (_p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Callback) =>
      run('write', cb, () => fs.write(fd, buf, len, pos), 'count'),
    flush: (_p: string, fd: number, cb: Callback) => run('flush', cb, () => fs.flush(fd)),
    fsync: (_p: string, _datasync: boolean, fd: number, cb: Callback) => run('fsync', cb, () => fs.fsync(fd)),
    release: (_p: string, fd: number, cb: Callback) => run('release', cb, () => fs.release(fd)),
    truncate: (p: string, size: number, cb: Callback) => run('truncate', cb, () => fs.truncate(p, size)),
    ftruncate: (_p: string, fd: number, size: number, cb: Callback) =>
      run('ftruncate', cb, () => fs.ftruncate(fd, size)),
    // Times arrive in milliseconds (atime is not kept).
    utimens: (p: string, _atime: number, mtime: number, cb: Callback) =>
      run('utimens', cb, () => fs.utimens(p, mtime)),
    chmod: (p: string, mode: number, cb: Callback) => run('chmod', cb, () => fs.chmod(p, mode)),
    chown: (p: string, _uid: number, _gid: number, cb: Callback) => run('chown', cb, () => fs.chown(p)),
    readlink: (p: string, cb: Callback) => run('readlink', cb, () => fs.readlink(p)),
    symlink: (target: string, p: string, cb: Callback) => run('symlink', cb, () => fs.symlink(target, p)),
    link: (_from: string, _to: string, cb: Callback) => run('link', cb, () => fs.link()),
    mknod: (_p: string, _mode: number, _dev: number, cb: Callback) => run('mknod', cb, () => fs.mknod()),
    unlink: (p: string, cb: Callback) => run('unlink', cb, () => fs.unlink(p)),
    rename: (from: string, to: string, cb: Callback) => run('rename', cb, () => fs.rename(from, to)),
    mkdir: (p: string, mode: number, cb: Callback) => run('mkdir', cb, () => fs.mkdir(p, mode)),
    rmdir: (p: string, cb: Callback) => run('rmdir', cb, () => fs.rmdir(p)),
    statfs: (_p: string, cb: Callback) => run('statfs', cb, () => fs.statfs()),
  };
  const fuse = new FuseClass(mountpoint, ops, {
    force: true,
    mkdir: true,
    maxRead: 1024 * 1024,
    fsname: 'tributary',
    subtype: 'tributary',
    // The last resort (see OPERATION_LIMIT_MS): the site's silence ends operations much sooner.
    timeout: OPERATION_LIMIT_MS,
  });
  try {
    await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  } catch (err) {
    clearInterval(probe);
    clearInterval(refresh);
    clearInterval(watchdog);
    setState('failed', (err as Error).message);
    await save();
    throw err;
  }
  feed.start();
  report(fs.isReachable);

  let unmounting: Promise<void> | undefined;
  return {
    id: state.id,
    mountpoint,
    fs,
    state: () => ({ ...state, stats: { ...state.stats } }),
    unmount: () =>
      (unmounting ??= (async () => {
        clearInterval(probe);
        clearInterval(refresh);
        setState('stopped');
        await feed.stop();
        await new Promise<void>((resolve, reject) => fuse.unmount((err) => (err ? reject(err) : resolve())));
        clearInterval(watchdog);
        await fs.closeAll();
        // Sessions left open (the site did not answer) stay recorded for the next mount to remove.
        await ledger.close();
        await writing;
        stopped = true;
        await removeMountState(home, state.id);
      })()),
  };
}
