/**
 * The small-files part of `npm run bench:mount` that needs no mount and no site: the generated
 * tree, the site's request counters (its Prometheus histogram) and latency percentiles.
 */
import { createCipheriv } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { prng } from '@tributary/testkit/prng';
import { parseRequestCounts, type RequestCounts } from '@tributary/testkit/request-counts';

// The counters are read as the mount's tests read them (packages/testkit); the tree's numbers come
// from the tests' seeded generator (the same tree in every run).
export { parseRequestCounts, prng, type RequestCounts };

export interface Tree {
  /** The tree's top directory (its name is `tree`). */
  root: string;
  files: number;
  bytes: number;
  /** Directories, `tree` itself included. */
  dirs: number;
  /** The directory holding the most files, relative to the tree's parent (e.g. `tree/part-3`). */
  largestDir: string;
  largestDirFiles: number;
}

export const TREE_MIN_BYTES = 4096;
export const TREE_MAX_BYTES = 65536;
const TREE_EXTENSIONS = ['.html', '.txt', '.png', '.js', '.json', '.css', '.md'];

/**
 * `count` files of 4 KB to 64 KB in a documentation-like tree under `parent/tree`: a few pages at
 * the top, six parts, each of four sections, each of three topics (most files at the deepest
 * levels: 2% at the top, 8% in parts, 30% in sections, 60% in topics). Names, sizes and bytes are
 * the same in every run (the bytes: an AES-CTR keystream with a fixed key, which nothing compresses).
 */
export async function makeTree(parent: string, count: number): Promise<Tree> {
  const next = prng(25);
  const keystream = createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16, 0));
  const root = path.join(parent, 'tree');
  const perDir = new Map<string, number>([['tree', 0]]);
  await fs.mkdir(root, { recursive: true });
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const r = next();
    const depth = r < 0.02 ? 0 : r < 0.1 ? 1 : r < 0.4 ? 2 : 3;
    const segments = [
      `part-${Math.floor(next() * 6)}`,
      `section-${Math.floor(next() * 4)}`,
      `topic-${Math.floor(next() * 3)}`,
    ].slice(0, depth);
    const size = TREE_MIN_BYTES + Math.floor(next() * (TREE_MAX_BYTES - TREE_MIN_BYTES + 1));
    const dir = path.join('tree', ...segments);
    if (!perDir.has(dir)) await fs.mkdir(path.join(parent, dir), { recursive: true });
    perDir.set(dir, (perDir.get(dir) ?? 0) + 1);
    const name = `page-${String(i).padStart(5, '0')}${TREE_EXTENSIONS[i % TREE_EXTENSIONS.length]}`;
    await fs.writeFile(path.join(parent, dir, name), keystream.update(Buffer.alloc(size)));
    bytes += size;
  }
  let largestDir = 'tree';
  for (const [dir, n] of perDir) if (n > perDir.get(largestDir)!) largestDir = dir;
  const dirs = new Set<string>();
  for (const dir of perDir.keys()) for (let d = dir; d !== '.' && d !== ''; d = path.dirname(d)) dirs.add(d);
  return { root, files: count, bytes, dirs: dirs.size, largestDir, largestDirFiles: perDir.get(largestDir)! };
}

/** What one phase cost the site, per kind of request: how many per file, and ms each on average. */
export interface RequestProfile {
  [request: string]: { requests: number; per_file: number; mean_ms: number };
}

/**
 * The requests between two readings of the counters, most frequent first. The readings themselves
 * (GET /metrics) are left out. Null when either reading is missing (the token cannot read /metrics).
 */
export function requestProfile(
  before: RequestCounts | undefined,
  after: RequestCounts | undefined,
  files: number,
): RequestProfile | null {
  if (!before || !after) return null;
  const rows = [...after.entries()]
    .map(([key, { count, seconds }]) => {
      const was = before.get(key) ?? { count: 0, seconds: 0 };
      return { key, count: count - was.count, seconds: seconds - was.seconds };
    })
    .filter((r) => r.count > 0 && !r.key.includes('/metrics'))
    .sort((a, b) => b.count - a.count);
  const profile: RequestProfile = {};
  for (const r of rows)
    profile[r.key] = {
      requests: r.count,
      per_file: Math.round((r.count / files) * 1000) / 1000,
      mean_ms: Math.round((r.seconds / r.count) * 1000 * 100) / 100,
    };
  return profile;
}

export interface Latency {
  samples: number;
  p50_ms: number;
  p95_ms: number;
  max_ms: number;
}

/** Nearest-rank percentiles of latencies in ms (at least one), to the microsecond. */
export function latencySummary(samples: number[]): Latency {
  if (samples.length === 0) throw new Error('no samples');
  const ms = [...samples].sort((a, b) => a - b);
  const at = (p: number): number => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)]!;
  const r3 = (n: number): number => Math.round(n * 1000) / 1000;
  return { samples: ms.length, p50_ms: r3(at(0.5)), p95_ms: r3(at(0.95)), max_ms: r3(ms[ms.length - 1]!) };
}
