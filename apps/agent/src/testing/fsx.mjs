#!/usr/bin/env node
// An fsx-style exerciser (after the file-system exerciser of BSD and xfstests): one random sequence of
// writes at random offsets, truncations (shrink and grow), appends, reads, fsyncs, renames and
// close/reopen (plain, O_TRUNC, O_APPEND), applied with the same seed to a file in a directory on the
// mount under test and to a file in a local directory. After every step the sizes are compared
// (fstat); every read compares the bytes read; after every close the whole contents are compared
// (SHA-256, and the differing ranges when they differ). With --multi, a second descriptor is open on
// the same file at times (what is written through one must be read back through the other once the
// write has returned), and the file is renamed while open too.
//
// It runs in a process of its own (apps/agent/src/mount/fsx.itest.ts starts it): the process that
// runs a FUSE mount, or a test talking to it, must never touch the mount synchronously.
//
//   node fsx.mjs --test-dir <dir on the mount> --ref-dir <local dir> [--seed N] [--ops N]
//                [--max-size BYTES] [--multi]
//
// On the first difference it prints the seed, the step, the last ops and the differing ranges, and
// exits 1; the same seed and op count replay the same sequence. Exit 0 prints a one-line summary.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

function parseArgs(argv) {
  const args = {
    seed: undefined,
    ops: 10000,
    maxSize: 2 * 1024 * 1024,
    multi: false,
    testDir: '',
    refDir: '',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--seed') args.seed = Number(next());
    else if (a === '--ops') args.ops = Number(next());
    else if (a === '--max-size') args.maxSize = Number(next());
    else if (a === '--multi') args.multi = true;
    else if (a === '--test-dir') args.testDir = next();
    else if (a === '--ref-dir') args.refDir = next();
    else usage(`unknown argument ${a}`);
  }
  if (!args.testDir || !args.refDir) usage('--test-dir and --ref-dir are required');
  if (args.seed === undefined) args.seed = Math.floor(Math.random() * 2 ** 31);
  for (const k of ['seed', 'ops', 'maxSize'])
    if (!Number.isSafeInteger(args[k]) || args[k] < 0) usage(`bad --${k}: ${args[k]}`);
  return args;
}

function usage(message) {
  console.error(
    `fsx: ${message}\nusage: fsx.mjs --test-dir DIR --ref-dir DIR [--seed N] [--ops N] [--max-size BYTES] [--multi]`,
  );
  process.exit(2);
}

/** mulberry32: a small, fast, seedable generator (the sequence depends on the seed only). */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    /** Bytes that depend only on the generator's state. */
    bytes(n) {
      const b = Buffer.allocUnsafe(n);
      let i = 0;
      for (; i + 4 <= n; i += 4) b.writeUInt32LE(Math.floor(next() * 4294967296), i);
      for (; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
  };
}

const args = parseArgs(process.argv.slice(2));
const r = rng(args.seed);
const KiB = 1024;

/** A length: mostly small, sometimes up to 256 KiB (several FUSE requests). */
function length() {
  const p = r.next();
  if (p < 0.5) return 1 + r.int(4 * KiB);
  if (p < 0.9) return 1 + r.int(64 * KiB);
  return 1 + r.int(256 * KiB);
}

// The two sides: the mount under test and the reference, each with up to two descriptors.
const sides = {
  test: { dir: args.testDir, fd: null, fd2: null },
  ref: { dir: args.refDir, fd: null, fd2: null },
};
let name = 'fsx.bin';
let renames = 0;
const history = [];
let step = 0;
const started = Date.now();
const stats = {};

function fail(message, extra = []) {
  const out = [
    `fsx: DIFFERENCE at step ${step} of ${args.ops} (seed ${args.seed}): ${message}`,
    ...extra,
    `last ${Math.min(history.length, 20)} ops:`,
    ...history.slice(-20).map((h) => `  ${h}`),
    `reproduce: FSX_SEED=${args.seed} FSX_OPS=${args.ops}${args.multi ? '' : ' FSX_MULTI=0'} (files: ${path.join(args.testDir, name)} and ${path.join(args.refDir, name)})`,
  ];
  console.error(out.join('\n'));
  process.exit(1);
}

/** Runs one call on both sides; an error on one side only (or different errors) is a difference. */
function both(what, call) {
  const res = {};
  for (const key of ['test', 'ref']) {
    try {
      res[key] = { value: call(sides[key], key) };
    } catch (err) {
      res[key] = { error: err };
    }
  }
  const { test, ref } = res;
  if (test.error || ref.error) {
    const code = (e) => (e ? (e.code ?? String(e.message)) : 'ok');
    if (code(test.error) !== code(ref.error))
      fail(`${what}: the mount gave ${code(test.error)}, the local file ${code(ref.error)}`, [
        test.error ? `  mount error: ${test.error.stack ?? test.error}` : '',
      ]);
  }
  return [test.value, ref.value];
}

/** The ranges where two buffers differ (at most 10), as text. */
function diffRanges(a, b, base = 0) {
  const ranges = [];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n && ranges.length < 10;) {
    if (i < a.length && i < b.length && a[i] === b[i]) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && !(j < a.length && j < b.length && a[j] === b[j])) j++;
    const hex = (buf) =>
      i >= buf.length ? '(none: the file ends before)' : buf.subarray(i, Math.min(j, i + 16)).toString('hex');
    ranges.push(
      `  bytes ${base + i}..${base + j - 1} (${j - i}): mount ${hex(a)}${j - i > 16 ? '...' : ''}, local ${hex(b)}${j - i > 16 ? '...' : ''}`,
    );
    i = j;
  }
  return ranges;
}

function checkSize(what) {
  const [t, l] = both(`${what}: fstat`, (s) => fs.fstatSync(s.fd).size);
  if (t !== l) fail(`${what}: size ${t} through the mount, ${l} locally`);
  return l;
}

function readAll(file) {
  return fs.readFileSync(file);
}

function compareWhole(what) {
  const [t, l] = both(`${what}: read the whole file`, (s) => readAll(path.join(s.dir, name)));
  const ht = createHash('sha256').update(t).digest('hex');
  const hl = createHash('sha256').update(l).digest('hex');
  if (ht !== hl)
    fail(
      `${what}: contents differ (sha256 ${ht.slice(0, 16)} through the mount, ${hl.slice(0, 16)} locally; sizes ${t.length} and ${l.length})`,
      diffRanges(t, l),
    );
}

function open(flags, second = false) {
  const names = [];
  let f = fs.constants.O_RDWR;
  if (flags.trunc) ((f |= fs.constants.O_TRUNC), names.push('O_TRUNC'));
  if (flags.append) ((f |= fs.constants.O_APPEND), names.push('O_APPEND'));
  if (flags.creat) ((f |= fs.constants.O_CREAT), names.push('O_CREAT'));
  both(`open ${names.join('|') || 'O_RDWR'}${second ? ' (second descriptor)' : ''}`, (s) => {
    const fd = fs.openSync(path.join(s.dir, name), f, 0o644);
    if (second) s.fd2 = fd;
    else s.fd = fd;
  });
  return names.join('|') || 'O_RDWR';
}

let appendMode = false;
let size = 0;

function log(text) {
  history.push(`#${step} ${text}`);
  if (history.length > 40) history.shift();
}

function count(op) {
  stats[op] = (stats[op] ?? 0) + 1;
}

// The file starts empty and open.
for (const s of Object.values(sides)) fs.mkdirSync(s.dir, { recursive: true });
open({ creat: true, trunc: true });
log('open O_CREAT|O_TRUNC');

const ops = [
  // [name, weight]
  ['write', 30],
  ['append', 10],
  ['read', 25],
  ['truncate', 8],
  ['fsync', 2],
  ['reopen', 6],
  // Open-file semantics the mount does not have yet: a second descriptor, a rename while open.
  ...(args.multi
    ? [
        ['second', 6],
        ['rename-open', 2],
      ]
    : []),
];
const totalWeight = ops.reduce((a, [, w]) => a + w, 0);
function pick() {
  let x = r.int(totalWeight);
  for (const [op, w] of ops) if ((x -= w) < 0) return op;
  return ops[0][0];
}

for (step = 1; step <= args.ops; step++) {
  const op = pick();
  count(op);
  // With a second descriptor open, writes and reads go through either of them.
  const useSecond = args.multi && sides.test.fd2 !== null && r.next() < 0.5;
  const fdOf = (s) => (useSecond ? s.fd2 : s.fd);
  const via = useSecond ? ' via fd2' : '';
  switch (op) {
    case 'write': {
      const len = Math.min(length(), Math.max(1, args.maxSize - 1));
      const off = r.int(Math.max(1, Math.min(args.maxSize - len, size + 64 * KiB)));
      if (appendMode && size + len > args.maxSize) {
        log('write skipped (O_APPEND, file at its largest)');
        break;
      }
      const data = r.bytes(len);
      // On a descriptor opened with O_APPEND, Linux's pwrite goes to the end too: both sides do the same.
      log(`write ${off}+${len}${via}${appendMode ? ' (O_APPEND: at the end)' : ''}`);
      both(`write ${off}+${len}`, (s) => fs.writeSync(fdOf(s), data, 0, len, off));
      size = appendMode ? size + len : Math.max(size, off + len);
      break;
    }
    case 'append': {
      const len = Math.min(length(), Math.max(1, args.maxSize - size));
      if (size + len > args.maxSize) {
        log('append skipped (file at its largest)');
        break;
      }
      const data = r.bytes(len);
      log(`append ${len} at ${size}${via}`);
      both(`append ${len}`, (s) =>
        appendMode ? fs.writeSync(fdOf(s), data, 0, len, null) : fs.writeSync(fdOf(s), data, 0, len, size),
      );
      size += len;
      break;
    }
    case 'read': {
      const off = r.int(size + 4 * KiB + 1);
      const len = length();
      log(`read ${off}+${len}${via}`);
      const [t, l] = both(`read ${off}+${len}`, (s) => {
        const buf = Buffer.alloc(len);
        let got = 0;
        // A read may come back short: read until the end of the file or the length.
        for (;;) {
          const n = fs.readSync(fdOf(s), buf, got, len - got, off + got);
          if (n === 0) break;
          got += n;
          if (got === len) break;
        }
        return buf.subarray(0, got);
      });
      if (!t.equals(l))
        fail(
          `read ${off}+${len}${via}: ${t.length} bytes through the mount, ${l.length} locally, not equal`,
          diffRanges(t, l, off),
        );
      break;
    }
    case 'truncate': {
      const grow = r.next() < 0.4;
      const to = grow ? Math.min(args.maxSize, size + r.int(256 * KiB) + 1) : r.int(size + 1);
      log(`ftruncate ${size} -> ${to}${via}`);
      both(`ftruncate to ${to}`, (s) => fs.ftruncateSync(fdOf(s), to));
      size = to;
      break;
    }
    case 'fsync': {
      log(`fsync${via}`);
      both('fsync', (s) => fs.fsyncSync(fdOf(s)));
      break;
    }
    case 'second': {
      if (sides.test.fd2 === null) {
        log('open a second descriptor O_RDWR');
        open({}, true);
      } else {
        log('close the second descriptor');
        both('close the second descriptor', (s) => {
          fs.closeSync(s.fd2);
          s.fd2 = null;
        });
      }
      break;
    }
    case 'rename-open': {
      const to = `fsx-${++renames}.bin`;
      log(`rename ${name} -> ${to} while open`);
      both(`rename ${name} -> ${to} while open`, (s) =>
        fs.renameSync(path.join(s.dir, name), path.join(s.dir, to)),
      );
      name = to;
      break;
    }
    case 'reopen': {
      log('close');
      both('close', (s) => {
        if (s.fd2 !== null) fs.closeSync(s.fd2);
        s.fd2 = null;
        fs.closeSync(s.fd);
        s.fd = null;
      });
      compareWhole('after close');
      const p = r.next();
      if (p < 0.25) {
        const dir = r.next() < 0.5 ? 'sub' : '';
        const to = path.join(dir, `fsx-${++renames}.bin`);
        log(`rename ${name} -> ${to}`);
        both(`rename ${name} -> ${to}`, (s) => {
          fs.mkdirSync(path.join(s.dir, 'sub'), { recursive: true });
          fs.renameSync(path.join(s.dir, name), path.join(s.dir, to));
        });
        name = to;
        compareWhole('after rename');
      } else if (p < 0.35) {
        const to = r.int(Math.min(args.maxSize, size + 128 * KiB) + 1);
        log(`truncate (by path, closed) ${size} -> ${to}`);
        both(`truncate by path to ${to}`, (s) => fs.truncateSync(path.join(s.dir, name), to));
        size = to;
        compareWhole('after truncate by path');
      }
      const q = r.next();
      const flags = { trunc: q < 0.1, append: q >= 0.1 && q < 0.3 };
      const opened = open(flags);
      log(`open ${opened}`);
      appendMode = flags.append;
      if (flags.trunc) size = 0;
      break;
    }
  }
  size = checkSize(`step ${step} (${op})`);
}

both('close', (s) => {
  if (s.fd2 !== null) fs.closeSync(s.fd2);
  fs.closeSync(s.fd);
});
compareWhole('at the end');
const seconds = (Date.now() - started) / 1000;
console.log(
  `fsx: ${args.ops} ops, seed ${args.seed}${args.multi ? ', two descriptors' : ''}: no difference in ${seconds.toFixed(1)} s ` +
    `(${Object.entries(stats)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}; final size ${size})`,
);
