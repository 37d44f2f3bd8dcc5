import path from 'node:path';
import { agentHome } from '../agent-home';
import { mountsDir as mountsDirOf, processAlive, readMountFiles, type MountState } from '../mount/state';

export type { MountState } from '../mount/state';

/**
 * What `trib mount`, `trib mounts`, `trib unmount` and the local UI see of the state files the mount
 * processes keep (src/mount/state.ts).
 */
export interface MountView extends MountState {
  /** False when the state says mounting/mounted/unreachable but its process is gone. */
  alive: boolean;
}

export function mountsDir(env: NodeJS.ProcessEnv = process.env): string {
  return mountsDirOf(agentHome(env));
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
