import { constants, promises as fs } from 'node:fs';
import path from 'node:path';

export interface FuseAvailability {
  available: boolean;
  /** Why not, in one line a person can act on. */
  reason?: string;
}

/** The FUSE device the kernel module provides. */
export const FUSE_DEVICE = '/dev/fuse';

async function onPath(command: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    try {
      await fs.access(path.join(dir, command), constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

/** Loads the native addon (`@cocalc/fuse-native`); throws when it is missing or was not built. */
export function loadFuseAddon(): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@cocalc/fuse-native') as unknown;
}

/**
 * Whether this machine can mount: the kernel's FUSE device, the `fusermount` helper (package
 * `fuse`) and the native addon must all be there. Never throws.
 */
export async function fuseAvailability(env: NodeJS.ProcessEnv = process.env): Promise<FuseAvailability> {
  try {
    await fs.access(FUSE_DEVICE, constants.R_OK | constants.W_OK);
  } catch {
    return {
      available: false,
      reason: `FUSE is not available: ${FUSE_DEVICE} is missing or not accessible (load the fuse kernel module, or give the container --device /dev/fuse)`,
    };
  }
  if (!(await onPath('fusermount', env))) {
    return {
      available: false,
      reason: 'FUSE is not available: fusermount was not found on PATH (install the "fuse" package)',
    };
  }
  try {
    loadFuseAddon();
  } catch (err) {
    return {
      available: false,
      reason: `FUSE is not available: the native addon @cocalc/fuse-native did not load (${(err as Error).message.split('\n')[0]}); install libfuse-dev and run npm ci with npm_config_nodedir=/usr`,
    };
  }
  return { available: true };
}
