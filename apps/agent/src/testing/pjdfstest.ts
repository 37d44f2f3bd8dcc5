import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';

/**
 * pjdfstest (the POSIX file-system test suite, ../shared/tools/pjdfstest) on a real mount: the
 * build (scripts/build-pjdfstest.sh), a `prove -v` run whose TAP output is parsed per test file and
 * assertion, and the comparison with the checked-in list of expected failures
 * (apps/agent/src/mount/pjdfstest-expected.txt). Used by apps/agent/src/mount/pjdfstest.itest.ts.
 *
 * Nothing here touches the mount from this process: prove and the tests run in child processes.
 */

export const REPO_ROOT = path.resolve(__dirname, '../../../..');
export const EXPECTED_FILE = path.resolve(__dirname, '../mount/pjdfstest-expected.txt');
export const BUILD_SCRIPT = path.join(REPO_ROOT, 'scripts/build-pjdfstest.sh');

/**
 * The directories run by default (CI): the operations the mount implements or is about to, without
 * the ones that are by design unsupported as a whole (chown, mkfifo, mknod, chflags) and without
 * rename/09.t and rename/10.t (4,452 assertions about sticky directories and other users, all but a
 * few by design), which PJDFSTEST_FULL=1 runs.
 */
export const SAMPLE_DIRS = [
  'open',
  'unlink',
  'rename',
  'mkdir',
  'rmdir',
  'truncate',
  'ftruncate',
  'symlink',
  'chmod',
  'utimensat',
  'link',
  'posix_fallocate',
];
export const SAMPLE_SKIP = new Set(['rename/09.t', 'rename/10.t']);

/** The build directory (PJDFSTEST_DIR, default .data/tools/pjdfstest in the work tree). */
export function pjdfstestDir(): string {
  return process.env.PJDFSTEST_DIR ?? path.join(REPO_ROOT, '.data/tools/pjdfstest');
}

/** Builds pjdfstest unless the build is current (a few seconds the first time, nothing after). */
export async function buildPjdfstest(): Promise<string> {
  const dir = pjdfstestDir();
  await new Promise<void>((resolve, reject) => {
    execFile(
      'bash',
      [BUILD_SCRIPT],
      { env: { ...process.env, PJDFSTEST_DIR: dir }, timeout: 300_000 },
      (err, _o, e) =>
        err ? reject(new Error(`building pjdfstest failed: ${err.message}\n${String(e)}`)) : resolve(),
    );
  });
  return dir;
}

/** The test files to run, as `dir/NN.t` relative to the suite's tests/ directory, in prove's order. */
export async function listTests(dir: string, full: boolean): Promise<string[]> {
  const testsDir = path.join(dir, 'tests');
  const dirs = full
    ? (await fs.readdir(testsDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name)
    : SAMPLE_DIRS;
  const files: string[] = [];
  for (const d of [...dirs].sort()) {
    for (const f of (await fs.readdir(path.join(testsDir, d))).filter((n) => n.endsWith('.t')).sort()) {
      const rel = `${d}/${f}`;
      if (full || !SAMPLE_SKIP.has(rel)) files.push(rel);
    }
  }
  return files;
}

// --- TAP ------------------------------------------------------------------------------------

export interface FileResult {
  /** `dir/NN.t` */
  file: string;
  /** Assertions the file announced (`1..N`); 0 if it never said. */
  planned: number;
  /** Assertions that passed (`ok N`, and `not ok N # TODO`, as TAP counts them). */
  passed: Set<number>;
  /** Assertions that failed, with the line pjdfstest printed (what it tried, expected, got). */
  failed: Map<number, string>;
  /** The file stopped the run (`Bail out!`), or exited before its plan was done. */
  bailedOut: boolean;
}

/**
 * Parses `prove -v` output (stdout and stderr merged): each test file starts with a line
 * `<path>/tests/<dir>/<NN>.t .. ` followed by its TAP. Assertions planned but never reported
 * (a test killed by its timeout, a bail-out) count as failed ("not run").
 */
export function parseProve(output: string): Map<string, FileResult> {
  const results = new Map<string, FileResult>();
  let cur: FileResult | undefined;
  for (const line of output.split('\n')) {
    const header = /^(?:\S*\/)?tests\/([^/\s]+\/[^/\s]+\.t) \.+ ?$/.exec(line);
    if (header) {
      cur = { file: header[1]!, planned: 0, passed: new Set(), failed: new Map(), bailedOut: false };
      results.set(cur.file, cur);
      continue;
    }
    if (!cur) continue;
    const plan = /^1\.\.(\d+)/.exec(line);
    if (plan) {
      cur.planned = Number(plan[1]);
      continue;
    }
    const result = /^(not )?ok (\d+)(.*)$/.exec(line);
    if (result) {
      const n = Number(result[2]);
      const todo = /#\s*TODO/i.test(result[3]!);
      if (!result[1] || todo) cur.passed.add(n);
      else cur.failed.set(n, line);
      continue;
    }
    if (/^Bail out!|^Bailout called/.test(line)) cur.bailedOut = true;
  }
  for (const r of results.values()) {
    for (let n = 1; n <= r.planned; n++) {
      if (!r.passed.has(n) && !r.failed.has(n)) {
        r.failed.set(n, `not run ${n} - the test stopped before it (bail-out, crash or timeout)`);
        r.bailedOut = true;
      }
    }
  }
  return results;
}

// --- Numbers and ranges ---------------------------------------------------------------------

/** `3,6,9-12` -> [3, 6, 9, 10, 11, 12] */
export function parseNumbers(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`not a list of assertion numbers: '${spec}'`);
    const a = Number(m[1]);
    const b = m[2] ? Number(m[2]) : a;
    if (b < a) throw new Error(`backward range in '${spec}'`);
    for (let n = a; n <= b; n++) out.push(n);
  }
  return out;
}

/** [3, 6, 9, 10, 11, 12] -> `3,6,9-12` */
export function formatNumbers(numbers: Iterable<number>): string {
  const sorted = [...new Set(numbers)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

// --- The expected-failure list --------------------------------------------------------------

export interface ExpectedEntry {
  file: string;
  /** The assertions expected to fail; `'*'`: any of the file's (the whole file). */
  numbers: Set<number> | '*';
  /** `~` before the numbers: they may fail or pass (timing), so passing is not reported. */
  flaky: boolean;
  reason: string;
  line: number;
}

/**
 * The list: one entry a line, `<dir>/<NN>.t <numbers or *> <reason>`, where numbers are `3,6,9-12`
 * and `*` means the whole file; `~` before the numbers (`~96`) marks assertions that may fail or pass
 * from one run to the next; `#` starts a comment. A file may have several lines (each with its own
 * reason).
 */
export function parseExpected(text: string): ExpectedEntry[] {
  const entries: ExpectedEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\s+#.*$/, '').trim();
    if (!line || line.startsWith('#')) return;
    const m = /^(\S+\.t)\s+(~?)(\*|[\d,-]+)\s+(.+)$/.exec(line);
    if (!m)
      throw new Error(
        `${EXPECTED_FILE}:${i + 1}: expected '<dir>/<NN>.t <numbers or *> <reason>', got '${raw}'`,
      );
    entries.push({
      file: m[1]!,
      numbers: m[3] === '*' ? '*' : new Set(parseNumbers(m[3]!)),
      flaky: m[2] === '~',
      reason: m[4]!,
      line: i + 1,
    });
  });
  return entries;
}

export interface Comparison {
  /** Failures the list does not name: each fails the test. */
  unexpected: { file: string; number: number; detail: string }[];
  /** Listed failures that pass now: the list must be updated (they fail the test too). */
  nowPassing: { file: string; numbers: number[]; reason: string; line: number }[];
  /** Listed files (whole-file entries) that passed completely. */
  wholeFilesPassing: { file: string; reason: string; line: number }[];
  expectedFailures: number;
}

export function compare(results: Map<string, FileResult>, expected: ExpectedEntry[]): Comparison {
  const byFile = new Map<string, ExpectedEntry[]>();
  for (const e of expected) byFile.set(e.file, [...(byFile.get(e.file) ?? []), e]);
  const out: Comparison = { unexpected: [], nowPassing: [], wholeFilesPassing: [], expectedFailures: 0 };
  for (const r of results.values()) {
    const entries = byFile.get(r.file) ?? [];
    const whole = entries.some((e) => e.numbers === '*');
    for (const [n, detail] of r.failed) {
      if (whole || entries.some((e) => e.numbers !== '*' && e.numbers.has(n))) out.expectedFailures++;
      else out.unexpected.push({ file: r.file, number: n, detail });
    }
    for (const e of entries) {
      if (e.flaky) continue;
      if (e.numbers === '*') {
        if (r.failed.size === 0) out.wholeFilesPassing.push({ file: r.file, reason: e.reason, line: e.line });
        continue;
      }
      const passing = [...e.numbers].filter((n) => r.passed.has(n));
      if (passing.length)
        out.nowPassing.push({ file: r.file, numbers: passing, reason: e.reason, line: e.line });
    }
  }
  return out;
}

// --- Reasons, for new entries -----------------------------------------------------------------

/**
 * A guess at why an assertion failed, from what pjdfstest says it tried: the mount's by-design gaps
 * (the list's header explains each). Undefined: nothing known explains it (look at it: a bug?).
 */
export function guessReason(detail: string): string | undefined {
  if (/\batime\b.* not updated/.test(detail)) return 'atime (relaxed: it shows mtime)';
  const tried = /tried '(.*)', expected (\S+), got (\S+)$/.exec(detail);
  if (!tried) return undefined;
  const [, cmd, want, got] = tried as unknown as [string, string, string, string];
  if (/^-u (?!0 )\d+|^-g (?!0 )\d+|^-u 0 -g (?!0\b)\d/.test(cmd)) return 'other users';
  // A missing entry follows from an earlier failure (the entry could not be made), whatever was tried.
  if (got === 'ENOENT' && want !== 'ENOENT') return undefined;
  // The operations tried (pjdfstest chains them with ':'), then what was checked.
  const ops = new Set(cmd.split(' : ').map((part) => part.replace(/^(-[ug] \S+ )+/, '').split(' ')[0]));
  const has = (...names: string[]): boolean => names.some((n) => ops.has(n));
  if (has('chown', 'lchown', 'fchown', 'fchownat')) return 'ownership';
  if (has('mknod', 'mknodat', 'mkfifo', 'mkfifoat', 'bind', 'bindat', 'connect', 'connectat'))
    return 'special files';
  if (has('link', 'linkat')) return 'hard links';
  if (has('chflags', 'lchflags', 'fchflags', 'chflagsat')) return 'chflags (BSD only)';
  if (got === 'ENAMETOOLONG' && want === '0') return 'paths (the namespace limit counts from its root)';
  // Another error says nothing about the entry's attributes: it follows from an earlier failure.
  if (/^E[A-Z]+$/.test(got)) return undefined;
  if (/\b(uid|gid)\b/.test(cmd)) return 'ownership';
  if (/\b(fifo|socket|char|block)\b/.test(want)) return 'special files';
  if (/\bnlink\b/.test(cmd)) return 'hard links';
  if (/\batime(_ns)?\b/.test(cmd) && !/\b[mc]time/.test(cmd)) return 'atime (relaxed: it shows mtime)';
  return undefined;
}

/**
 * New list lines for failures the list does not name, one line per file and reason; a failure with
 * no reason of its own is taken to follow from the last one before it that has one (a file that
 * could not be created cannot be unlinked either).
 */
export function suggestEntries(results: Map<string, FileResult>, expected: ExpectedEntry[]): string[] {
  const cmp = compare(results, expected);
  const byFile = new Map<string, Set<number>>();
  for (const u of cmp.unexpected) byFile.set(u.file, (byFile.get(u.file) ?? new Set()).add(u.number));
  const lines: string[] = [];
  for (const [file, numbers] of byFile) {
    const groups = new Map<string, number[]>();
    let previous: string | undefined;
    const all = [...(results.get(file)?.failed ?? new Map<number, string>())].sort((a, b) => a[0] - b[0]);
    for (const [n, detail] of all) {
      previous = guessReason(detail) ?? previous;
      if (!numbers.has(n)) continue;
      const reason = previous ?? 'UNEXPLAINED: look at it (a bug? then "BUG: <what>")';
      groups.set(reason, [...(groups.get(reason) ?? []), n]);
    }
    for (const [reason, ns] of groups) lines.push(`${file} ${formatNumbers(ns)} ${reason}`);
  }
  return lines;
}

/**
 * The list rewritten from a run (PJDFSTEST_UPDATE=1): for the files that ran, listed assertions
 * that pass now are dropped (a line with none left goes), and failures not on the list are added
 * with a guessed reason next to the file's other lines (or where the file sorts). Comments, other
 * files' lines and the order are kept.
 */
export function rewriteExpected(text: string, results: Map<string, FileResult>): string {
  const lines: (string | null)[] = text.split('\n');
  for (const e of parseExpected(text)) {
    const r = results.get(e.file);
    if (!r || e.flaky) continue;
    const raw = lines[e.line - 1]!;
    if (e.numbers === '*') {
      if (r.failed.size === 0) lines[e.line - 1] = null;
      continue;
    }
    const still = [...e.numbers].filter((n) => r.failed.has(n));
    if (still.length === 0) lines[e.line - 1] = null;
    else if (still.length !== e.numbers.size)
      lines[e.line - 1] = raw.replace(/^(\S+\.t\s+)\S+/, `$1${formatNumbers(still)}`);
  }
  const kept = lines.filter((l): l is string => l !== null);
  const fileOf = (l: string): string | undefined => /^(\S+\.t)\s+~?(\*|[\d,-]+)\s/.exec(l)?.[1];
  for (const add of suggestEntries(results, parseExpected(kept.join('\n')))) {
    const file = fileOf(add)!;
    let at = -1;
    kept.forEach((l, i) => {
      if (fileOf(l) === file) at = i + 1;
    });
    if (at < 0) at = kept.findIndex((l) => (fileOf(l) ?? '') > file);
    if (at < 0) {
      at = kept.length;
      while (at > 0 && kept[at - 1] === '') at--;
    }
    kept.splice(at, 0, add);
  }
  return kept.join('\n');
}

/** Counts over a run: assertions planned, passed, failed (TODO assertions count as passed, as TAP says). */
export function counts(results: Map<string, FileResult>): {
  files: number;
  total: number;
  passed: number;
  failed: number;
} {
  let total = 0;
  let passed = 0;
  let failed = 0;
  for (const r of results.values()) {
    passed += r.passed.size;
    failed += r.failed.size;
    total += Math.max(r.planned, r.passed.size + r.failed.size);
  }
  return { files: results.size, total, passed, failed };
}
