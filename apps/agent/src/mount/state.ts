import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentHome } from '../agent-home';

export type MountStatus = 'mounting' | 'mounted' | 'unreachable' | 'stopped' | 'failed';

export interface MountStats {
  bytesRead: number;
  bytesWritten: number;
  /** FUSE operations answered (successfully or not). */
  operations: number;
  /** Operations answered with an error. */
  errors: number;
}

/**
 * What a mount process reports about itself in `<agent home>/mounts/<id>.json`, written atomically
 * on every state change and every ~2 s, removed on a clean exit. The CLI and the local UI read it.
 */
export interface MountState {
  id: string;
  pid: number;
  /** Absolute path of the local directory. */
  mountpoint: string;
  /** The federation path mounted there. */
  remote: string;
  /** The site's base URL. */
  site: string;
  state: MountStatus;
  /** ISO 8601. */
  startedAt: string;
  updatedAt: string;
  stats: MountStats;
  lastError?: string;
}

export const mountsDir = (home: string): string => path.join(home, 'mounts');

export function newMountId(): string {
  return randomBytes(4).toString('hex');
}

/** Writes a mount's state file atomically (a temp file renamed over it). */
export async function writeMountState(home: string, state: MountState): Promise<void> {
  const dir = mountsDir(home);
  await fs.mkdir(dir, { recursive: true });
  const file = path.join(dir, `${state.id}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
  await fs.rename(tmp, file);
}

export async function removeMountState(home: string, id: string): Promise<void> {
  await fs.rm(path.join(mountsDir(home), `${id}.json`), { force: true });
}

/** Every mount state file under `home` as written, oldest first; unreadable or half-written files are skipped. */
export async function readMountFiles(home: string): Promise<MountState[]> {
  let names: string[];
  try {
    names = await fs.readdir(mountsDir(home));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const states: MountState[] = [];
  // `<id>.json`; not the upload records kept next to them (`<id>.uploads.json`, upload-record.ts).
  for (const name of names.filter((n) => n.endsWith('.json') && !n.endsWith('.uploads.json'))) {
    try {
      const state = JSON.parse(await fs.readFile(path.join(mountsDir(home), name), 'utf8')) as MountState;
      if (
        typeof state.id !== 'string' ||
        typeof state.pid !== 'number' ||
        typeof state.mountpoint !== 'string'
      )
        continue;
      states.push(state);
    } catch {
      // Being replaced or not ours: skip.
    }
  }
  return states.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

/** Whether a mount's process still runs (EPERM: it runs, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Every mount state file under `home`, oldest first. A file whose process no longer runs (the
 * mount was killed) is reported with state `failed` unless it already says `stopped` or `failed`.
 */
export async function readMountStates(home: string): Promise<MountState[]> {
  return (await readMountFiles(home)).map((state): MountState =>
    state.state !== 'stopped' && state.state !== 'failed' && !processAlive(state.pid)
      ? { ...state, state: 'failed', lastError: state.lastError ?? 'the mount process is gone' }
      : state,
  );
}

// ---- reading them: `trib mount`, `trib mounts`, `trib unmount` and the local UI ----

/**
 * What `trib mount`, `trib mounts`, `trib unmount` and the local UI see of the state files the mount
 * processes keep (src/mount/state.ts).
 */
export interface MountView extends MountState {
  /** False when the state says mounting/mounted/unreachable but its process is gone. */
  alive: boolean;
}

/** The state files' folder of the agent home the environment names. */
export function mountsDirFor(env: NodeJS.ProcessEnv = process.env): string {
  return mountsDir(agentHome(env));
}

export function mountLogFile(id: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(agentHome(env), 'logs', `mount-${id}.log`);
}

/** Every mount state file, sorted by mountpoint. */
export async function listMounts(env: NodeJS.ProcessEnv = process.env): Promise<MountView[]> {
  const states = await readMountFiles(agentHome(env));
  return states
    .map((state) => {
      const live = state.state === 'mounting' || state.state === 'mounted' || state.state === 'unreachable';
      return { ...state, alive: live ? processAlive(state.pid) : false };
    })
    .sort((a, b) => a.mountpoint.localeCompare(b.mountpoint));
}

/** The mount whose mountpoint is `dir` (compared as resolved absolute paths). */
export async function findMount(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<MountView | undefined> {
  const wanted = path.resolve(dir);
  const there = (await listMounts(env)).filter((m) => path.resolve(m.mountpoint) === wanted);
  // A live mount before the record of one whose process died there.
  return there.find((m) => m.alive) ?? there[0];
}
