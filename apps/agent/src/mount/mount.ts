import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ApiConnection } from '@tributary/buffer';
import { normalizePath } from '@tributary/shared';
import { agentHome } from '../agent-home';
import { fuseAvailability, loadFuseAddon } from './availability';
import { ChangeFeed } from './change-feed';
import { NamespaceFs } from './filesystem';
import { removeStaleSpills } from './patch-file';
import { errno, toErrno } from './remote';
import { newMountId, removeMountState, writeMountState, type MountState, type MountStatus } from './state';

const MiB = 1024 * 1024;

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
  const api = new ApiConnection({ baseUrl: site, token: options.token });
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

  // Dirty bytes a dead mount never committed are lost (docs/mount.md); their files need not stay.
  await removeStaleSpills().catch(() => 0);
  const fs = new NamespaceFs({
    api,
    remoteRoot: remote,
    cacheTtlMs: options.cacheTtlMs ?? 3000,
    bufferBytes: (options.bufferMiB ?? 32) * MiB,
    onReachability: (reachable, error) => setState(reachable ? 'mounted' : 'unreachable', error),
  });
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

  // While the site is unreachable, probe it every second; an answer ends the outage.
  const probe = setInterval(() => {
    if (fs.isReachable) return;
    void fs.remote.health().then((ok) => ok && fs.setReachable(true));
  }, 1000);
  const feed = new ChangeFeed({
    baseUrl: site,
    token: options.token,
    path: remote,
    onChange: (change) => fs.cache.apply(change),
    onResync: () => fs.cache.clear(),
    onConnected: (connected) => {
      fs.cache.setLive(connected);
      if (connected) fs.setReachable(true);
    },
  });
  const refresh = setInterval(() => void save(), options.stateIntervalMs ?? 2000);

  const FuseClass = bigRequestFuse();
  const debug = process.env.TRIBUTARY_MOUNT_DEBUG === '1';
  const trace = process.env.TRIBUTARY_MOUNT_DEBUG === 'trace';
  const run = (name: string, cb: Callback, op: () => unknown, shape: 'value' | 'count' = 'value'): void => {
    fs.stats.operations++;
    const started = trace ? performance.now() : 0;
    if (trace) {
      const done = cb;
      cb = (code, ...values) => {
        process.stderr.write(`${name} ${code} ${(performance.now() - started).toFixed(1)} ms\n`);
        done(code, ...values);
      };
    }
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
    create: (p: string, _mode: number, cb: Callback) => run('create', cb, () => fs.create(p)),
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
    utimens: (p: string, _atime: number, _mtime: number, cb: Callback) =>
      run('utimens', cb, () => fs.utimens(p)),
    // Modes and owners are not part of the catalog (access is its permissions): accepted, ignored.
    chmod: (p: string, _mode: number, cb: Callback) => run('chmod', cb, () => fs.utimens(p)),
    chown: (p: string, _uid: number, _gid: number, cb: Callback) => run('chown', cb, () => fs.utimens(p)),
    unlink: (p: string, cb: Callback) => run('unlink', cb, () => fs.unlink(p)),
    rename: (from: string, to: string, cb: Callback) => run('rename', cb, () => fs.rename(from, to)),
    mkdir: (p: string, _mode: number, cb: Callback) => run('mkdir', cb, () => fs.mkdir(p)),
    rmdir: (p: string, cb: Callback) => run('rmdir', cb, () => fs.rmdir(p)),
    statfs: (_p: string, cb: Callback) => run('statfs', cb, () => fs.statfs()),
  };
  const fuse = new FuseClass(mountpoint, ops, {
    force: true,
    mkdir: true,
    maxRead: 1024 * 1024,
    fsname: 'tributary',
    subtype: 'tributary',
    // Operations end by themselves well before this (short retries); a commit of a large write may take a while.
    timeout: 120_000,
  });
  try {
    await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  } catch (err) {
    clearInterval(probe);
    clearInterval(refresh);
    setState('failed', (err as Error).message);
    await save();
    throw err;
  }
  feed.start();
  setState(fs.isReachable ? 'mounted' : 'unreachable');

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
        await fs.closeAll();
        await writing;
        stopped = true;
        await removeMountState(home, state.id);
      })()),
  };
}
