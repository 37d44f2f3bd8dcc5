// A stand-in for src/mount/main.ts in tests of `trib mount`/`trib unmount`: it speaks the same
// contract (arguments, TRIBUTARY_TOKEN in the environment, agentHome()/mounts/<id>.json, exit 3
// without FUSE) but mounts nothing. FAKE_MOUNT_MODE: ok (default), nofuse, fail, hang, stubborn.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const args = process.argv.slice(2);
const arg = (name) => args[args.indexOf(name) + 1];
const mode = process.env.FAKE_MOUNT_MODE || 'ok';
const home = process.env.TRIBUTARY_AGENT_HOME;
const id = process.env.TRIBUTARY_MOUNT_ID || String(process.pid);
const file = path.join(home, 'mounts', `${id}.json`);
const startedAt = new Date().toISOString();

function write(state, extra) {
  const record = {
    id,
    pid: process.pid,
    mountpoint: arg('--mountpoint'),
    remote: arg('--remote'),
    site: arg('--site'),
    state,
    startedAt,
    updatedAt: new Date().toISOString(),
    stats: { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 },
    fake: {
      argv: args,
      tokenInEnv: Boolean(process.env.TRIBUTARY_TOKEN),
      token: process.env.TRIBUTARY_TOKEN,
    },
    ...extra,
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(record));
  fs.renameSync(`${file}.tmp`, file);
}

console.log(`fake mount ${id}: ${args.join(' ')}`);
if (mode === 'nofuse') {
  console.error('FUSE is not available: /dev/fuse is missing');
  process.exit(3);
}
write('mounting');
if (mode === 'fail') {
  console.error('cannot reach the site');
  write('failed', { lastError: 'the site did not answer' });
  process.exit(1);
}
if (mode !== 'hang') setTimeout(() => write('mounted'), 200);
process.on('SIGTERM', () => {
  if (mode === 'stubborn') return;
  write('stopped');
  fs.rmSync(file, { force: true });
  process.exit(0);
});
setInterval(() => undefined, 1000);
