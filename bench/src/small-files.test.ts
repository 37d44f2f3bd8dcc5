import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  latencySummary,
  makeTree,
  parseRequestCounts,
  prng,
  requestProfile,
  TREE_MAX_BYTES,
  TREE_MIN_BYTES,
} from './small-files';

const scratch: string[] = [];
afterEach(async () => {
  await Promise.all(scratch.splice(0).map((d) => fs.rm(d, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-small-files-'));
  scratch.push(dir);
  return dir;
}

/** Every file under `root`, relative, with its size and SHA-256. */
async function describeTree(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const bytes = await fs.readFile(full);
    out.push(
      `${path.relative(root, full)} ${bytes.length} ${createHash('sha256').update(bytes).digest('hex')}`,
    );
  }
  return out.sort();
}

describe('the generated tree', () => {
  it('is the same in every run: names, sizes and bytes', async () => {
    const [a, b] = [await tempDir(), await tempDir()];
    const ta = await makeTree(a, 300);
    const tb = await makeTree(b, 300);
    expect(await describeTree(ta.root)).toEqual(await describeTree(tb.root));
    expect({ ...ta, root: '' }).toEqual({ ...tb, root: '' });
  });

  it('has the files asked for, 4 to 64 KB, in a few levels of directories, and knows its fullest one', async () => {
    const tree = await makeTree(await tempDir(), 400);
    const files = await describeTree(tree.root);
    expect(files).toHaveLength(400);
    const sizes = files.map((f) => Number(f.split(' ')[1]));
    expect(Math.min(...sizes)).toBeGreaterThanOrEqual(TREE_MIN_BYTES);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(TREE_MAX_BYTES);
    expect(sizes.reduce((x, y) => x + y, 0)).toBe(tree.bytes);
    const depths = new Set(files.map((f) => f.split(' ')[0]!.split('/').length - 1));
    expect([...depths].sort()).toEqual([0, 1, 2, 3]);
    const dirs = (await fs.readdir(tree.root, { recursive: true, withFileTypes: true })).filter((e) =>
      e.isDirectory(),
    );
    expect(tree.dirs).toBe(dirs.length + 1);
    const perDir = new Map<string, number>();
    for (const f of files) {
      const dir = path.join('tree', path.dirname(f.split(' ')[0]!));
      perDir.set(dir, (perDir.get(dir) ?? 0) + 1);
    }
    expect(tree.largestDirFiles).toBe(Math.max(...perDir.values()));
    expect(perDir.get(path.normalize(tree.largestDir))).toBe(tree.largestDirFiles);
  });

  it('draws from a fixed sequence', () => {
    const a = prng(25);
    const b = prng(25);
    const values = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(values);
    for (const v of values) expect(v >= 0 && v < 1).toBe(true);
    expect(prng(26)()).not.toBe(values[0]);
  });
});

const METRICS = (putCount: number, putSum: number, statCount: number): string =>
  [
    '# HELP tributary_http_request_duration_seconds HTTP request duration by method, route and status',
    '# TYPE tributary_http_request_duration_seconds histogram',
    `tributary_http_request_duration_seconds_bucket{le="0.005",method="PUT",route="/api/v1/data",status="201"} ${putCount}`,
    `tributary_http_request_duration_seconds_sum{method="PUT",route="/api/v1/data",status="201"} ${putSum}`,
    `tributary_http_request_duration_seconds_count{method="PUT",route="/api/v1/data",status="201"} ${putCount}`,
    `tributary_http_request_duration_seconds_sum{method="GET",route="/api/v1/namespace/stat",status="404"} ${statCount * 0.002}`,
    `tributary_http_request_duration_seconds_count{method="GET",route="/api/v1/namespace/stat",status="404"} ${statCount}`,
    `tributary_http_request_duration_seconds_sum{method="GET",route="/metrics",status="200"} ${statCount}`,
    `tributary_http_request_duration_seconds_count{method="GET",route="/metrics",status="200"} ${statCount}`,
    'process_cpu_seconds_total 12.5',
  ].join('\n');

describe('the site request profile', () => {
  it('reads the request histogram of /metrics', () => {
    const counts = parseRequestCounts(METRICS(10, 0.05, 3));
    expect(counts.get('PUT /api/v1/data 201')).toEqual({ count: 10, seconds: 0.05 });
    expect(counts.get('GET /api/v1/namespace/stat 404')).toEqual({ count: 3, seconds: 0.006 });
    expect(counts.size).toBe(3);
  });

  it('gives the requests of a phase per file and their mean time, most frequent first, without the readings', () => {
    const before = parseRequestCounts(METRICS(10, 0.05, 3));
    const after = parseRequestCounts(METRICS(110, 0.45, 203));
    expect(requestProfile(before, after, 100)).toEqual({
      'GET /api/v1/namespace/stat 404': { requests: 200, per_file: 2, mean_ms: 2 },
      'PUT /api/v1/data 201': { requests: 100, per_file: 1, mean_ms: 4 },
    });
    expect(Object.keys(requestProfile(before, after, 100)!)[0]).toBe('GET /api/v1/namespace/stat 404');
  });

  it('is unknown when the counters could not be read', () => {
    expect(requestProfile(undefined, new Map(), 10)).toBeNull();
    expect(requestProfile(new Map(), undefined, 10)).toBeNull();
  });
});

describe('latency percentiles', () => {
  it('are nearest-rank, to the microsecond', () => {
    const samples = Array.from({ length: 100 }, (_, i) => (100 - i) / 10);
    expect(latencySummary(samples)).toEqual({ samples: 100, p50_ms: 5, p95_ms: 9.5, max_ms: 10 });
    expect(latencySummary([0.12345])).toEqual({ samples: 1, p50_ms: 0.123, p95_ms: 0.123, max_ms: 0.123 });
    expect(() => latencySummary([])).toThrow();
  });
});
