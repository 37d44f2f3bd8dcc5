import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  AdvanceBufferPool,
  ApiConnection,
  ApiRemoteFile,
  BufferedFile,
  DEFAULT_BUFFER_OPTIONS,
  resolveBufferOptions,
  type RemoteFile,
} from '@tributary/buffer';
import { BenchClient, httpTransport } from './client';
import { startDelayProxyThread } from '@tributary/testkit/delay-proxy';
import { localSite, remoteSite, type BenchSite } from './site';

const KiB = 1024;
const MiB = 1024 * KiB;
const BLOCKS = [
  { key: '4k', bytes: 4 * KiB },
  { key: '64k', bytes: 64 * KiB },
  { key: '1m', bytes: 1 * MiB },
] as const;
const MODES = ['unbuffered', 'fixed', 'adaptive'] as const;
type BufferMode = (typeof MODES)[number];

const USAGE = `npm run bench:buffer -- [options]

Sequential reads and writes through the advance buffer against a real API behind a TCP proxy that
adds a round-trip time, at application block sizes 4 KiB, 64 KiB and 1 MiB: remote requests per
MiB and MiB/s for unbuffered access, the seed's fixed buffer and the adaptive buffer, and a direct
whole-file GET/PUT (the seed's pget/pput) as the baseline; then random 4 KiB reads, adaptive
against unbuffered. The headline ratios (4 KiB adaptive against the direct transfer, random
adaptive against unbuffered) come from --pairs alternating pairs of runs: the median of the
per-pair ratios, with the smallest and largest. Without TRIBUTARY_URL it starts a site of its own
(removed at the end).

  --json              print one JSON object, nothing else on stdout
  --rtt-ms N          added round-trip time (default 10)
  --size-mib N        file size for buffered and direct runs (default 256)
  --unbuffered-mib N  unbuffered runs cover this prefix only (default 4; at 4 KiB and 10 ms one
                      request per block would take minutes for 256 MiB); rates are per MiB
  --fixed-mib N       the seed's fixed buffer size (default 8)
  --adaptive-mib N    the adaptive buffer's largest window and part (default 32, the library's)
  --pairs N           alternating baseline/measured pairs for the headline ratios (default 5)
  --pair-mib N        bytes per sequential run in each pair (default: --size-mib)
  --random-reads N    random 4 KiB reads per mode in each pair, alternating read by read (default 100)

Environment: TRIBUTARY_URL and TRIBUTARY_TOKEN (a write-scope token) to measure an existing site.`;

interface Options {
  json: boolean;
  rttMs: number;
  sizeMiB: number;
  unbufferedMiB: number;
  fixedMiB: number;
  adaptiveMiB: number;
  randomReads: number;
  pairs: number;
  pairMiB: number;
}

interface Measure {
  mib: number;
  seconds: number;
  requests: number;
  /** Writes: the part of `seconds` spent in close (the last parts, then the commit at the site). */
  closeSeconds?: number;
  /**
   * CPU time of this process meanwhile (user and system, all its threads: the client, and for a
   * site of its own the API's worker thread and the proxy's; not PostgreSQL). Less sensitive to
   * the machine's load than the elapsed time.
   */
  cpuSeconds?: number;
}

interface Rates {
  mib: number;
  seconds: number;
  requests_per_mib: number;
  mib_per_s: number;
  close_seconds?: number;
  cpu_ms_per_mib?: number;
}

/** One pair of the headline figures: the baseline run, the measured run and their ratio. */
interface Pair {
  baseline: Rates;
  measured: Rates;
  ratio: number;
  /** Sequential pairs: CPU time per MiB of the measured run over the baseline's. */
  cpu_ratio?: number;
}

const rates = (m: Measure): Rates => ({
  mib: m.mib,
  seconds: round(m.seconds, 3),
  requests_per_mib: round(m.requests / m.mib, 2),
  mib_per_s: round(m.mib / m.seconds, 1),
  ...(m.closeSeconds !== undefined ? { close_seconds: round(m.closeSeconds, 3) } : {}),
  ...(m.cpuSeconds !== undefined ? { cpu_ms_per_mib: round((m.cpuSeconds * 1000) / m.mib, 2) } : {}),
});
const round = (n: number, digits: number): number => Number(n.toFixed(digits));

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean', default: false },
      'rtt-ms': { type: 'string', default: '10' },
      'size-mib': { type: 'string', default: '256' },
      'unbuffered-mib': { type: 'string', default: '4' },
      'fixed-mib': { type: 'string', default: '8' },
      'adaptive-mib': { type: 'string', default: String(DEFAULT_BUFFER_OPTIONS.bufferBytes / MiB) },
      'random-reads': { type: 'string', default: '100' },
      pairs: { type: 'string', default: '5' },
      'pair-mib': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const positive = (name: string, value: string, allowZero = false): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
      throw new Error(`--${name} must be a positive number`);
    return n;
  };
  const sizeMiB = Math.floor(positive('size-mib', values['size-mib']));
  return {
    json: values.json,
    rttMs: positive('rtt-ms', values['rtt-ms'], true),
    sizeMiB,
    unbufferedMiB: Math.min(sizeMiB, Math.floor(positive('unbuffered-mib', values['unbuffered-mib']))),
    fixedMiB: positive('fixed-mib', values['fixed-mib']),
    adaptiveMiB: positive('adaptive-mib', values['adaptive-mib']),
    randomReads: Math.floor(positive('random-reads', values['random-reads'])),
    pairs: Math.max(1, Math.floor(positive('pairs', values.pairs))),
    pairMiB: Math.min(sizeMiB, Math.floor(positive('pair-mib', values['pair-mib'] ?? String(sizeMiB)))),
  };
}

/** Distinct pseudo-random content, quick to make: one random block, stamped per copy. */
function makeContent(bytes: number): Buffer {
  const block = randomBytes(4 * MiB);
  const out = Buffer.allocUnsafe(bytes);
  for (let offset = 0, n = 0; offset < bytes; offset += block.length, n++) {
    block.writeUInt32BE(n, 0);
    block.copy(out, offset, 0, Math.min(block.length, bytes - offset));
  }
  return out;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options) {
    console.log(USAGE);
    return;
  }
  const log = (line: string): void => {
    (options.json ? process.stderr : process.stdout).write(line + '\n');
  };
  const url = process.env.TRIBUTARY_URL;
  const envToken = process.env.TRIBUTARY_TOKEN;
  if (url && !envToken) throw new Error('TRIBUTARY_URL needs TRIBUTARY_TOKEN (a token with write scope)');
  const site: BenchSite = url && envToken ? await remoteSite(url, envToken) : await localSite('thread');
  const upstream = new URL(site.baseUrl);
  const proxy = await startDelayProxyThread(
    { host: upstream.hostname, port: Number(upstream.port || 80) },
    options.rttMs,
  );
  try {
    const transport = httpTransport(site.baseUrl, 4);
    const token =
      site.token ??
      (site.admin &&
        (await BenchClient.createWriteToken(transport, site.admin.username, site.admin.password)));
    if (!token) throw new Error('no token');
    const bench = new BenchClient(transport, token);
    const base = `${await bench.homePath()}/bench-buffer-${Date.now().toString(36)}`;
    await bench.makeCollection(base);

    let requests = 0;
    const api = new ApiConnection({
      baseUrl: proxy.url,
      token,
      onRequest: () => void requests++,
    });
    const fixedBytes = options.fixedMiB * MiB;
    const adaptiveBytes = options.adaptiveMiB * MiB;
    const prefixNote = (mode: BufferMode): string =>
      mode === 'unbuffered' ? `   (first ${options.unbufferedMiB} MiB)` : '';
    const size = options.sizeMiB * MiB;
    const prefix = options.unbufferedMiB * MiB;
    log(`site: ${site.description}`);
    log(
      `added round-trip time ${options.rttMs} ms (TCP proxy); file ${options.sizeMiB} MiB; ` +
        `unbuffered runs on the first ${options.unbufferedMiB} MiB only (rates are per MiB); ` +
        `seed's fixed buffer ${options.fixedMiB} MiB, adaptive windows and parts up to ${options.adaptiveMiB} MiB`,
    );
    const content = makeContent(size);
    const readPath = `${base}/read.bin`;
    await bench.put(readPath, { kind: 'bytes', data: content });

    const measure = async (mib: number, run: () => Promise<void>): Promise<Measure> => {
      requests = 0;
      const cpu = process.cpuUsage();
      const started = performance.now();
      await run();
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      return { mib, seconds, requests, cpuSeconds: (used.user + used.system) / 1e6 };
    };
    // Buffered files are opened through one pool, as the mount opens its files: they share one
    // memory limit (a single file's default), and a file read or written after another reuses
    // the buffers the first one gave back.
    const bufferPool = new AdvanceBufferPool({
      memoryLimitBytes: 2 * resolveBufferOptions({ bufferBytes: adaptiveBytes }).maxWriteBehindBytes,
    });
    const wrap = (remote: RemoteFile, mode: BufferMode): Pick<RemoteFile, 'read' | 'write' | 'close'> =>
      mode === 'unbuffered'
        ? remote
        : bufferPool.open(
            remote,
            mode === 'fixed' ? { mode: 'fixed', bufferBytes: fixedBytes } : { bufferBytes: adaptiveBytes },
          );

    /** Flushes dirty pages of earlier writes, so each write run starts from the same state. */
    const settle = (): void => {
      if (!site.token) execFileSync('sync');
    };
    const readRun = (
      mode: BufferMode,
      blockBytes: number,
      bytes = mode === 'unbuffered' ? prefix : size,
    ): Promise<Measure> => {
      return measure(bytes / MiB, async () => {
        const file = wrap(await ApiRemoteFile.openForRead(api, readPath), mode);
        // As an application reads (read(2) into its own buffer): the buffered file copies into it.
        const block = Buffer.allocUnsafe(blockBytes);
        for (let offset = 0; offset < bytes; offset += blockBytes) {
          const wanted = Math.min(blockBytes, bytes - offset);
          const n =
            file instanceof BufferedFile
              ? await file.readInto(offset, wanted === blockBytes ? block : block.subarray(0, wanted))
              : (await file.read(offset, wanted)).length;
          if (n !== wanted) throw new Error(`short read at ${offset}`);
        }
        await file.close();
      });
    };
    const writeRun = async (
      mode: BufferMode,
      name: string,
      blockBytes: number,
      bytes = mode === 'unbuffered' ? prefix : size,
    ): Promise<Measure> => {
      settle();
      let closeStarted = 0;
      const measured = await measure(bytes / MiB, async () => {
        const file = wrap(ApiRemoteFile.openForWrite(api, `${base}/${name}.bin`), mode);
        for (let offset = 0; offset < bytes; offset += blockBytes) {
          await file.write(offset, content.subarray(offset, Math.min(offset + blockBytes, bytes)));
        }
        closeStarted = performance.now();
        await file.close(); // committed: the object exists when this returns
      });
      return { ...measured, closeSeconds: (performance.now() - closeStarted) / 1000 };
    };

    /** The seed's pget: one GET of the whole object (or, with `bytes`, of its first bytes). */
    const directReadRun = (bytes = size): Promise<Measure> =>
      measure(bytes / MiB, async () => {
        const res = await api.send({
          method: 'GET',
          url: `/api/v1/data?path=${encodeURIComponent(readPath)}`,
          headers: bytes < size ? { range: `bytes=0-${bytes - 1}` } : {},
        });
        let got = 0;
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) got += chunk.length;
        if (got !== bytes) throw new Error(`direct read got ${got} bytes`);
      });
    /**
     * The fastest direct read this client has: one GET whose body the kernel writes straight into
     * one buffer (`receiveInto`, the transport read-ahead windows use), allocated and written once
     * before any run. A second baseline, so the buffer's own cost shows apart from the transport's.
     */
    // Written once here: a large zeroed allocation is mapped lazily, and the first run would pay
    // the page faults of all 256 MiB.
    const intoTarget = Buffer.allocUnsafe(size).fill(1);
    const directIntoReadRun = (bytes = size): Promise<Measure> =>
      measure(bytes / MiB, async () => {
        const { filled } = await api.receiveInto(
          {
            method: 'GET',
            url: `/api/v1/data?path=${encodeURIComponent(readPath)}`,
            headers: bytes < size ? { range: `bytes=0-${bytes - 1}` } : {},
          },
          intoTarget.subarray(0, bytes),
        );
        if (filled !== bytes) throw new Error(`direct read into a buffer got ${filled} bytes`);
      });
    /** The seed's pput: one PUT of the whole object. */
    const directWriteRun = (name: string, bytes = size): Promise<Measure> => {
      settle();
      return measure(bytes / MiB, async () => {
        await api.send({
          method: 'PUT',
          url: `/api/v1/data?path=${encodeURIComponent(`${base}/${name}.bin`)}`,
          headers: { 'content-type': 'application/octet-stream' },
          body: content.subarray(0, bytes),
        });
      });
    };

    // Reads first (they leave no dirty pages behind), each block size after a direct GET baseline.
    const directRead = await directReadRun();
    log(`direct read (pget, one GET): ${fmt(rates(directRead))}`);
    const read: Record<string, Record<BufferMode, Rates>> = {};
    for (const block of BLOCKS) {
      read[block.key] = {} as Record<BufferMode, Rates>;
      for (const mode of MODES) {
        read[block.key]![mode] = rates(await readRun(mode, block.bytes));
        log(
          `read  ${block.key.padStart(3)} ${mode.padEnd(10)} ${fmt(read[block.key]![mode])}${prefixNote(mode)}`,
        );
      }
    }
    const directWrite = await directWriteRun('direct');
    log(`direct write (pput, one PUT): ${fmt(rates(directWrite))}`);
    const write: Record<string, Record<BufferMode, Rates>> = {};
    for (const block of BLOCKS) {
      write[block.key] = {} as Record<BufferMode, Rates>;
      for (const mode of MODES) {
        write[block.key]![mode] = rates(await writeRun(mode, `write-${block.key}-${mode}`, block.bytes));
        log(
          `write ${block.key.padStart(3)} ${mode.padEnd(10)} ${fmt(write[block.key]![mode])}` +
            `   close ${write[block.key]![mode].close_seconds?.toFixed(2)} s${prefixNote(mode)}`,
        );
      }
    }

    // Headline figures: alternating pairs of baseline and measured runs, each pair's ratio taken
    // from two runs seconds apart, so a change in the machine's load between pairs moves both.
    // The order alternates too (baseline first in even pairs), so a steady drift favours neither.
    const pairBytes = options.pairMiB * MiB;
    const logPair = (label: string, i: number, pair: Pair): void =>
      log(
        `${label} pair ${i + 1}/${options.pairs}: baseline ${fmt(pair.baseline)}   measured ` +
          `${fmt(pair.measured)}   ratio ${pair.ratio}` +
          (pair.cpu_ratio !== undefined ? `   cpu ratio ${pair.cpu_ratio}` : ''),
      );
    const paired = async (
      label: string,
      baseline: (i: number) => Promise<Measure>,
      measured: (i: number) => Promise<Measure>,
      ratioOf: (baseline: Measure, measured: Measure) => number,
    ): Promise<Pair[]> => {
      const pairs: Pair[] = [];
      for (let i = 0; i < options.pairs; i++) {
        let b: Measure;
        let m: Measure;
        if (i % 2 === 0) {
          b = await baseline(i);
          m = await measured(i);
        } else {
          m = await measured(i);
          b = await baseline(i);
        }
        const pair: Pair = { baseline: rates(b), measured: rates(m), ratio: round(ratioOf(b, m), 3) };
        if (b.cpuSeconds && m.cpuSeconds)
          pair.cpu_ratio = round(m.cpuSeconds / m.mib / (b.cpuSeconds / b.mib), 3);
        pairs.push(pair);
        logPair(label, i, pair);
      }
      return pairs;
    };
    const speedRatio = (b: Measure, m: Measure): number => b.seconds / b.mib / (m.seconds / m.mib);
    const readPairs = await paired(
      `read 4k adaptive vs direct GET (${options.pairMiB} MiB)`,
      () => directReadRun(pairBytes),
      () => readRun('adaptive', 4 * KiB, pairBytes),
      speedRatio,
    );
    const readIntoPairs = await paired(
      `read 4k adaptive vs direct GET into one buffer (${options.pairMiB} MiB)`,
      () => directIntoReadRun(pairBytes),
      () => readRun('adaptive', 4 * KiB, pairBytes),
      speedRatio,
    );
    const writePairs = await paired(
      `write 4k adaptive vs direct PUT (${options.pairMiB} MiB)`,
      (i) => directWriteRun(`pair-${i}-direct`, pairBytes),
      (i) => writeRun('adaptive', `pair-${i}-adaptive`, 4 * KiB, pairBytes),
      speedRatio,
    );

    // Random 4 KiB reads over the whole file: the adaptive buffer must not cost more than unbuffered.
    // A random read is one short request, so the two modes can alternate read by read: each pair
    // opens the object in both modes and reads its offsets once in each, the first mode alternating,
    // so both see the same moments of the machine's load. Pairs read different offsets.
    let seed = 12345;
    const nextOffset = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * (size - 4 * KiB));
    };
    const randomPairs: Pair[] = [];
    for (let i = 0; i < options.pairs; i++) {
      const files = {
        unbuffered: wrap(await ApiRemoteFile.openForRead(api, readPath), 'unbuffered'),
        adaptive: wrap(await ApiRemoteFile.openForRead(api, readPath), 'adaptive'),
      };
      const spent = {
        unbuffered: { mib: 0, seconds: 0, requests: 0 },
        adaptive: { mib: 0, seconds: 0, requests: 0 },
      };
      for (let n = 0; n < options.randomReads; n++) {
        const offset = nextOffset();
        const order =
          n % 2 === 0 ? (['unbuffered', 'adaptive'] as const) : (['adaptive', 'unbuffered'] as const);
        for (const mode of order) {
          const before = requests;
          const started = performance.now();
          await files[mode].read(offset, 4 * KiB);
          spent[mode].seconds += (performance.now() - started) / 1000;
          spent[mode].requests += requests - before;
          spent[mode].mib += (4 * KiB) / MiB;
        }
      }
      await files.unbuffered.close();
      await files.adaptive.close();
      const pair: Pair = {
        baseline: rates(spent.unbuffered),
        measured: rates(spent.adaptive),
        // The slowdown: how much longer the adaptive reads took than the unbuffered ones.
        ratio: round(spent.adaptive.seconds / spent.unbuffered.seconds - 1, 3),
      };
      randomPairs.push(pair);
      logPair(`random 4k adaptive vs unbuffered (${options.randomReads} reads, alternating)`, i, pair);
    }
    const sum = (ms: Rates[]): Rates =>
      rates({
        mib: ms.reduce((a, m) => a + m.mib, 0),
        seconds: ms.reduce((a, m) => a + m.seconds, 0),
        requests: ms.reduce((a, m) => a + m.requests_per_mib * m.mib, 0),
      });
    const random = {
      unbuffered: sum(randomPairs.map((p) => p.baseline)),
      adaptive: sum(randomPairs.map((p) => p.measured)),
    };

    const direct = { read: rates(directRead), write: rates(directWrite) };
    const ratio = (a: Rates, b: Rates): number => round(a.mib_per_s / b.mib_per_s, 3);
    const spread = (
      key: string,
      pairs: Pair[],
      value: (p: Pair) => number | undefined = (p) => p.ratio,
    ): Record<string, number> => {
      const sorted = pairs
        .map(value)
        .filter((v): v is number => v !== undefined)
        .sort((a, b) => a - b);
      if (sorted.length === 0) return {};
      const mid = sorted.length / 2;
      const median =
        sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
      return {
        [key]: round(median, 3),
        [`${key}_min`]: sorted[0]!,
        [`${key}_max`]: sorted[sorted.length - 1]!,
      };
    };
    const summary = {
      ...spread('read_4k_adaptive_vs_direct', readPairs),
      ...spread('read_4k_adaptive_vs_direct_into', readIntoPairs),
      ...spread('write_4k_adaptive_vs_direct', writePairs),
      ...spread('random_4k_adaptive_slowdown_vs_unbuffered', randomPairs),
      // CPU time per MiB, measured run over direct transfer (same pairs).
      ...spread('read_4k_adaptive_cpu_vs_direct', readPairs, (p) => p.cpu_ratio),
      ...spread('read_4k_adaptive_cpu_vs_direct_into', readIntoPairs, (p) => p.cpu_ratio),
      ...spread('write_4k_adaptive_cpu_vs_direct', writePairs, (p) => p.cpu_ratio),
      // From the table's single runs (not paired).
      read_4k_fixed_vs_direct: ratio(read['4k']!.fixed, direct.read),
      write_4k_fixed_vs_direct: ratio(write['4k']!.fixed, direct.write),
    } as Record<string, number>;
    const range = (key: string): string =>
      `${summary[key]} (${summary[`${key}_min`]} to ${summary[`${key}_max`]})`;
    const slowdown = summary.random_4k_adaptive_slowdown_vs_unbuffered!;
    log(
      `median of ${options.pairs} pairs (min to max): 4k adaptive vs direct: read ` +
        `${range('read_4k_adaptive_vs_direct')} (goal >= 0.8), write ${range('write_4k_adaptive_vs_direct')} ` +
        `(goal >= 0.7); random adaptive slowdown ${(slowdown * 100).toFixed(1)}% ` +
        `(${range('random_4k_adaptive_slowdown_vs_unbuffered')}; goal <= 5%)`,
    );
    log(
      `4k adaptive read vs a direct GET into one buffer (the windows' transport): ` +
        `${range('read_4k_adaptive_vs_direct_into')}, CPU ${range('read_4k_adaptive_cpu_vs_direct_into')}`,
    );
    if (summary.write_4k_adaptive_cpu_vs_direct !== undefined)
      log(
        `CPU time per MiB of this process, 4k adaptive over direct (median, min to max): read ` +
          `${range('read_4k_adaptive_cpu_vs_direct')}, write ${range('write_4k_adaptive_cpu_vs_direct')}`,
      );
    log(
      `single runs of the table: 4k fixed vs direct: read ${summary.read_4k_fixed_vs_direct}, ` +
        `write ${summary.write_4k_fixed_vs_direct}`,
    );
    if (options.json) {
      console.log(
        JSON.stringify({
          ...summary,
          rtt_ms: options.rttMs,
          size_mib: options.sizeMiB,
          unbuffered_prefix_mib: options.unbufferedMiB,
          fixed_buffer_mib: options.fixedMiB,
          adaptive_max_mib: options.adaptiveMiB,
          pairs: options.pairs,
          pair_mib: options.pairMiB,
          direct,
          read,
          write,
          random_4k: { reads_per_pair: options.randomReads, ...random },
          paired: {
            read_4k: readPairs,
            read_4k_vs_direct_into: readIntoPairs,
            write_4k: writePairs,
            random_4k: randomPairs,
          },
        }),
      );
    }
  } finally {
    await proxy.close();
    await site.close();
  }
}

const fmt = (r: Rates): string =>
  `${r.mib_per_s.toFixed(1).padStart(7)} MiB/s ${r.requests_per_mib.toFixed(2).padStart(8)} req/MiB`;

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
