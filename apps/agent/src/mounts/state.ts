import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentHome } from '../agent-home';
import { processAlive } from '../transfers/registry';

/**
 * The state file a mount process keeps in `agentHome()/mounts/<id>.json` (written by src/mount,
 * read here by `trib mount`, `trib mounts`, `trib unmount` and the local UI).
 */
export interface MountState {
  id: string;
  pid: number;
  mountpoint: string;
  remote: string;
  site: string;
  state: 'mounting' | 'mounted' | 'unreachable' | 'stopped' | 'failed';
  startedAt: string;
  updatedAt: string;
  stats: { bytesRead: number; bytesWritten: number; operations: number; errors: number };
  lastError?: string;
}

/** What a reader adds: the process behind a live-looking state has gone. */
export interface MountView extends MountState {
  /** False when the state says mounting/mounted/unreachable but its process is gone. */
  alive: boolean;
}

export function mountsDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(agentHome(env), 'mounts');
}

export function mountLogFile(id: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(agentHome(env), 'logs', `mount-${id}.log`);
}

/** Reads one state file; undefined when it is missing or not (yet) valid JSON. */
export async function readMountState(file: string): Promise<MountState | undefined> {
  try {
    const parsed = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<MountState>;
    if (typeof parsed.id !== 'string' || typeof parsed.mountpoint !== 'string') return undefined;
    return {
      id: parsed.id,
      pid: Number(parsed.pid),
      mountpoint: parsed.mountpoint,
      remote: String(parsed.remote ?? ''),
      site: String(parsed.site ?? ''),
      state: parsed.state ?? 'mounting',
      startedAt: String(parsed.startedAt ?? ''),
      updatedAt: String(parsed.updatedAt ?? ''),
      stats: {
        bytesRead: Number(parsed.stats?.bytesRead ?? 0),
        bytesWritten: Number(parsed.stats?.bytesWritten ?? 0),
        operations: Number(parsed.stats?.operations ?? 0),
        errors: Number(parsed.stats?.errors ?? 0),
      },
      lastError: parsed.lastError,
    };
  } catch {
    return undefined;
  }
}

/** Every mount state file, sorted by mountpoint. */
export async function listMounts(env: NodeJS.ProcessEnv = process.env): Promise<MountView[]> {
  const dir = mountsDir(env);
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  const result: MountView[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const state = await readMountState(path.join(dir, name));
    if (!state) continue;
    const live = state.state === 'mounting' || state.state === 'mounted' || state.state === 'unreachable';
    result.push({ ...state, alive: live ? processAlive(state.pid) : false });
  }
  return result.sort((a, b) => a.mountpoint.localeCompare(b.mountpoint));
}

/** The mount whose mountpoint is `dir` (compared as resolved absolute paths). */
export async function findMount(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<MountView | undefined> {
  const wanted = path.resolve(dir);
  return (await listMounts(env)).find((m) => path.resolve(m.mountpoint) === wanted);
}
