// The FUSE mount of the namespace (docs/mount.md). Run it in a process of its own: dist/mount/main.js.
export { fuseAvailability, type FuseAvailability } from './availability';
export { mountNamespace, FuseUnavailableError, type MountHandle, type MountOptions } from './mount';
export { readMountStates, mountsDir, type MountState, type MountStats, type MountStatus } from './state';
