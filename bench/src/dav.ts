/**
 * `npm run bench:dav`: the WebDAV endpoint's byte path against the API's own, in one run on one
 * site: a 1 GiB object uploaded with `PUT /dav/...` against `PUT /api/v1/data`, and downloaded with
 * `GET /dav/...` against `GET /api/v1/data` (issue 33; goals: each ratio at least 0.9).
 *
 * Both sides stream the same file from disk with the same node:http client and drain the answers
 * the same way. Each round runs the two sides back to back (alternating which goes first), so both
 * meet about the same load on a shared machine; a round's ratio is WebDAV's throughput over the
 * API's (1.0: as fast), and the figure is the median of the rounds' ratios (the fastest rounds'
 * ratio is printed too). Throughputs are medians over the rounds.
 * Without TRIBUTARY_URL the bench starts a site of its own (embedded PostgreSQL, the API in a
 * worker thread: site.ts).
 */
import { createReadStream, promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomFillSync } from 'node:crypto';
import { parseArgs } from 'node:util';
import { median, settle } from './bench-kit';
import { BenchClient, expectOk, httpTransport } from './client';
import { localSite, remoteSite, type BenchSite } from './site';

const MiB = 1024 * 1024;

const USAGE = `npm run bench:dav -- [options]

Uploads and downloads one large object through WebDAV (/dav/) and through the API (/api/v1/data) of
the same site, alternating, and prints each side's throughput and the ratios dav_put_vs_direct and
dav_get_vs_direct (WebDAV throughput over the API's; goals at least 0.9).

  --json          print one JSON object, nothing else on stdout
  --size-mib N    object size (default 1024)
  --rounds N      rounds of each transfer (default 6, so each side goes first as often; the
                  median of the rounds' ratios counts)
  --quick         64 MiB, 2 rounds (a smoke run)

Environment: TRIBUTARY_URL and TRIBUTARY_TOKEN (a write-scope token) to measure an existing site.`;

interface Options {
  json: boolean;
  sizeMiB: number;
  rounds: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      'size-mib': { type: 'string' },
      rounds: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const positive = (text: string | undefined, fallback: number, name: string): number => {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
    return n;
  };
  return {
    json: values.json,
    sizeMiB: positive(values['size-mib'], values.quick ? 64 : 1024, '--size-mib'),
    rounds: positive(values.rounds, values.quick ? 2 : 6, '--rounds'),
  };
}

/** One request with a streamed body or a drained answer; resolves with the status and seconds. */
function transfer(
  url: string,
  method: 'PUT' | 'GET',
  headers: Record<string, string>,
  file?: { path: string; size: number },
): Promise<{ status: number; seconds: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      url,
      {
        method,
        headers: file ? { ...headers, 'content-length': String(file.size) } : headers,
        agent: false,
      },
      (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, seconds: (performance.now() - started) / 1000, bytes }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (file) createReadStream(file.path, { highWaterMark: 4 * MiB }).pipe(req);
    else req.end();
  });
}

async function main(): Promise<void> {
  const opts = options();
  const log = (line: string): void => {
    if (!opts.json) console.log(line);
    else console.error(line);
  };
  const url = process.env.TRIBUTARY_URL;
  const envToken = process.env.TRIBUTARY_TOKEN;
  if (url && !envToken) throw new Error('TRIBUTARY_URL needs TRIBUTARY_TOKEN (a token with write scope)');
  const site: BenchSite = url && envToken ? await remoteSite(url, envToken) : await localSite('thread');
  try {
    const transport = httpTransport(site.baseUrl, 4);
    const token =
      site.token ??
      (await BenchClient.createWriteToken(transport, site.admin!.username, site.admin!.password));
    const me = JSON.parse(
      expectOk(await transport.request('GET', '/api/v1/me', { authorization: `Bearer ${token}` }), 'GET /me')
        .text,
    ) as { username: string; homePath: string };
    const client = new BenchClient(transport, token);
    const dir = `${me.homePath}/bench-dav-${Date.now()}`;
    await client.makeCollection(dir);
    const size = opts.sizeMiB * MiB;
    const file = path.join(site.scratchDir, 'bench-dav.bin');
    const handle = await fs.open(file, 'w');
    const block = Buffer.alloc(8 * MiB);
    for (let written = 0; written < size; written += block.length) {
      randomFillSync(block);
      await handle.write(block, 0, Math.min(block.length, size - written));
    }
    await handle.close();
    log(`site: ${site.description}`);
    log(`object: ${opts.sizeMiB} MiB, ${opts.rounds} rounds, under ${dir}`);

    const bearer = { authorization: `Bearer ${token}` };
    const basicAuth = {
      authorization: 'Basic ' + Buffer.from(`${me.username}:${token}`).toString('base64'),
    };
    const apiUrl = (name: string, overwrite: boolean): string =>
      `${site.baseUrl}/api/v1/data?path=${encodeURIComponent(`${dir}/${name}`)}${overwrite ? '&overwrite=true' : ''}`;
    const davUrl = (name: string): string =>
      `${site.baseUrl}/dav${dir.split('/').map(encodeURIComponent).join('/')}/${name}`;
    const body = { path: file, size };
    const octets = { 'content-type': 'application/octet-stream' };

    const times = {
      apiPut: [] as number[],
      davPut: [] as number[],
      apiGet: [] as number[],
      davGet: [] as number[],
    };
    const check = (what: string, r: { status: number; bytes: number }, expectBytes?: number): void => {
      if (r.status < 200 || r.status >= 300) throw new Error(`${what}: HTTP ${r.status}`);
      if (expectBytes !== undefined && r.bytes !== expectBytes)
        throw new Error(`${what}: ${r.bytes} bytes instead of ${expectBytes}`);
    };
    for (let round = 0; round < opts.rounds; round++) {
      const first = round % 2 === 0 ? 'api' : 'dav';
      const sides = first === 'api' ? (['api', 'dav'] as const) : (['dav', 'api'] as const);
      for (const side of sides) {
        await settle();
        const r =
          side === 'api'
            ? await transfer(apiUrl('api.bin', round > 0), 'PUT', { ...bearer, ...octets }, body)
            : await transfer(davUrl('dav.bin'), 'PUT', { ...basicAuth, ...octets }, body);
        check(`${side} PUT`, r);
        (side === 'api' ? times.apiPut : times.davPut).push(r.seconds);
        log(`  round ${round + 1} ${side} PUT ${(opts.sizeMiB / r.seconds).toFixed(0)} MiB/s`);
      }
      for (const side of sides) {
        await settle();
        const r =
          side === 'api'
            ? await transfer(apiUrl('api.bin', false), 'GET', bearer)
            : await transfer(davUrl('dav.bin'), 'GET', basicAuth);
        check(`${side} GET`, r, size);
        (side === 'api' ? times.apiGet : times.davGet).push(r.seconds);
        log(`  round ${round + 1} ${side} GET ${(opts.sizeMiB / r.seconds).toFixed(0)} MiB/s`);
      }
    }
    const mibs = (seconds: number[]): number => opts.sizeMiB / median(seconds);
    // Per round: the API's time over WebDAV's (WebDAV's throughput over the API's).
    const ratios = (api: number[], dav: number[]): number[] => api.map((a, i) => a / dav[i]!);
    const best = (seconds: number[]): number => Math.min(...seconds);
    const result = {
      size_mib: opts.sizeMiB,
      rounds: opts.rounds,
      api_put_mib_s: Number(mibs(times.apiPut).toFixed(1)),
      dav_put_mib_s: Number(mibs(times.davPut).toFixed(1)),
      api_get_mib_s: Number(mibs(times.apiGet).toFixed(1)),
      dav_get_mib_s: Number(mibs(times.davGet).toFixed(1)),
      dav_put_vs_direct: Number(median(ratios(times.apiPut, times.davPut)).toFixed(3)),
      dav_get_vs_direct: Number(median(ratios(times.apiGet, times.davGet)).toFixed(3)),
      dav_put_vs_direct_rounds: ratios(times.apiPut, times.davPut).map((r) => Number(r.toFixed(3))),
      dav_get_vs_direct_rounds: ratios(times.apiGet, times.davGet).map((r) => Number(r.toFixed(3))),
      dav_put_vs_direct_best: Number((best(times.apiPut) / best(times.davPut)).toFixed(3)),
      dav_get_vs_direct_best: Number((best(times.apiGet) / best(times.davGet)).toFixed(3)),
      goal: 0.9,
    };
    if (opts.json) {
      console.log(JSON.stringify(result));
    } else {
      log(
        `ratios per round: PUT ${result.dav_put_vs_direct_rounds.join(', ')}; GET ${result.dav_get_vs_direct_rounds.join(', ')}`,
      );
      log(`fastest rounds: PUT ${result.dav_put_vs_direct_best}, GET ${result.dav_get_vs_direct_best}`);
      log(`PUT: API ${result.api_put_mib_s} MiB/s, WebDAV ${result.dav_put_mib_s} MiB/s`);
      log(`GET: API ${result.api_get_mib_s} MiB/s, WebDAV ${result.dav_get_mib_s} MiB/s`);
      log(
        `dav_put_vs_direct ${result.dav_put_vs_direct} (goal >= 0.9: ${result.dav_put_vs_direct >= 0.9 ? 'met' : 'not met'})`,
      );
      log(
        `dav_get_vs_direct ${result.dav_get_vs_direct} (goal >= 0.9: ${result.dav_get_vs_direct >= 0.9 ? 'met' : 'not met'})`,
      );
    }
    await fs.rm(file, { force: true });
  } finally {
    await site.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
