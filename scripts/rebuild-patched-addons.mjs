// Rebuilds the native addons that patches/ changes (applied by patch-package in postinstall): npm
// compiles an addon while installing it, before the root's postinstall patches its source, so the
// binary must be built again from the patched source. Skipped when the binary is newer than its
// source (an install that changed nothing), and when the addon is not installed (it is optional).
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

const addons = [
  // utimens handed the access time over twice, never the modification time (patches/@cocalc+fuse-native+*.patch).
  { dir: 'node_modules/@cocalc/fuse-native', source: 'fuse-native.c', binary: 'build/Release/fuse.node' },
];

for (const addon of addons) {
  const source = path.join(addon.dir, addon.source);
  const binary = path.join(addon.dir, addon.binary);
  if (!existsSync(source)) continue;
  if (existsSync(binary) && statSync(binary).mtimeMs > statSync(source).mtimeMs) continue;
  // npm runs lifecycle scripts with the path of its own node-gyp; outside npm, node-gyp from PATH.
  const gyp = process.env.npm_config_node_gyp;
  const [command, args] = gyp ? [process.execPath, [gyp, 'rebuild']] : ['node-gyp', ['rebuild']];
  console.log(`rebuilding ${addon.dir} from its patched source`);
  const run = spawnSync(command, args, { cwd: addon.dir, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(`rebuilding ${addon.dir} failed (exit ${run.status}); the mount will not keep file times`);
    process.exit(1);
  }
}
