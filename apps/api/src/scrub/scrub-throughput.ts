import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Pacer, Scrubber } from '@tributary/placement';
import { sendFile } from '../storage/file-io';
import { SCRUB_CONCURRENCY } from './scrub.constants';
import { storageHasher } from './storage-hasher';

/** One file as the scrub sees a copy. */
interface BenchCopy {
  key: string;
  checksum: string;
}

export interface ScrubThroughput {
  files: number;
  bytes: number;
  rounds: number;
  /** Median wall time of one unthrottled scrub pass over the files. */
  scrubSeconds: number;
  /** Median wall time of `sha256sum` over the same files. */
  sha256sumSeconds: number;
  scrubMiBs: number;
  sha256sumMiBs: number;
  /** scrub throughput / sha256sum throughput (the goal is at least 0.7). */
  ratio: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** sha256sum takes this many files per run (argument lists stay well below the system's limit). */
const SHA256SUM_FILES = 1000;

/** Runs `sha256sum` over the files (`dir`-relative), resolving with each file's hex digest. */
async function sha256sum(dir: string, files: readonly string[]): Promise<Map<string, string>> {
  const sums = new Map<string, string>();
  for (let i = 0; i < files.length; i += SHA256SUM_FILES) {
    const part = files.slice(i, i + SHA256SUM_FILES);
    const out = await new Promise<string>((resolve, reject) =>
      execFile('sha256sum', ['--', ...part], { cwd: dir, maxBuffer: 64 * 1024 * 1024 }, (err, stdout) =>
        err ? reject(new Error(`sha256sum failed: ${err.message}`)) : resolve(stdout),
      ),
    );
    for (const line of out.split('\n')) {
      const m = /^\\?([0-9a-f]{64}) [ *](.*)$/.exec(line);
      if (m) sums.set(m[2]!, m[1]!);
    }
  }
  return sums;
}

/**
 * `scrub_vs_sha256`: the scrub's unthrottled throughput over `files` (paths relative to `dir`)
 * against `sha256sum` over the same files. The scrub side is the engine as the
 * site runs it (Scrubber, the storage hasher reading each file as the local storage driver sends it, a pacer at rate 0, the
 * findings compared with the expected checksums and recorded, here in memory), without the catalog:
 * what the measure is about is hashing at the rate the disk and the CPU allow. The files are read
 * once first so both sides read from the page cache, then the two alternate `rounds` times
 * (medians reported). `concurrency`: copies hashed at once (default: the site's). Rejects if the scrub finds any file different from what sha256sum says.
 */
export async function measureScrubVsSha256(
  dir: string,
  files: readonly string[],
  options: { rounds?: number; concurrency?: number } = {},
): Promise<ScrubThroughput> {
  const rounds = options.rounds ?? 3;
  let bytes = 0;
  for (const f of files) bytes += (await fs.stat(path.join(dir, f))).size;
  // Warm-up and the expected checksums (the catalog's, for the scrub).
  const expected = await sha256sum(dir, files);
  if (expected.size !== new Set(files).size) throw new Error('sha256sum did not hash every file');
  const copies: BenchCopy[] = files.map((key) => ({ key, checksum: expected.get(key)! }));

  let bad = 0;
  const scrubber = new Scrubber<BenchCopy>({
    source: {
      next: (after, limit) => {
        const from = after ? copies.indexOf(after) + 1 : 0;
        return Promise.resolve(copies.slice(from, from + limit));
      },
    },
    // The local driver's own reading (LocalFsDriver.send), on plain paths below `dir`.
    hasher: storageHasher<BenchCopy>({
      send: (key, range, out) => sendFile(path.join(dir, key), range, out),
    }),
    recorder: {
      record: (_copy, finding) => {
        if (finding.kind !== 'ok') bad++;
        return Promise.resolve(true);
      },
    },
    pacer: new Pacer({ bytesPerSecond: 0 }),
    intervalMs: 1000,
    batchSize: 200,
    concurrency: options.concurrency ?? SCRUB_CONCURRENCY,
  });

  const scrubTimes: number[] = [];
  const sumTimes: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let t = process.hrtime.bigint();
    const stats = await scrubber.pass();
    scrubTimes.push(Number(process.hrtime.bigint() - t) / 1e9);
    if (bad > 0 || stats.ok !== copies.length) throw new Error(`the scrub found ${bad} file(s) different`);
    t = process.hrtime.bigint();
    await sha256sum(dir, files);
    sumTimes.push(Number(process.hrtime.bigint() - t) / 1e9);
  }
  const scrubSeconds = median(scrubTimes);
  const sha256sumSeconds = median(sumTimes);
  const MiB = 1024 * 1024;
  return {
    files: files.length,
    bytes,
    rounds,
    scrubSeconds,
    sha256sumSeconds,
    scrubMiBs: bytes / MiB / scrubSeconds,
    sha256sumMiBs: bytes / MiB / sha256sumSeconds,
    ratio: sha256sumSeconds / scrubSeconds,
  };
}
