import 'reflect-metadata';
import { GetObjectCommand, S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { freePort, migrate, startEmbeddedPostgres, type EmbeddedServer } from '@tributary/api/embedding';
import { s3ResourceEnv, startS3Server, type S3Server } from '@tributary/testkit/s3-server';
import { median, writeRandomFile } from './bench-kit';
import { BenchClient, httpTransport } from './client';
import { startSiteProcess, stopSiteProcess } from './site-process';

const USAGE = `npm run bench:storage [-- --json] [-- --quick] [-- --rounds N]

A site whose default storage resource is an S3 bucket on SeaweedFS (started here, as the tests do;
scripts/setup-seaweedfs.sh builds it), against the same SDK talking to the same server directly:

  s3_put_vs_direct      1 GiB PUT through the site / the same bytes uploaded with @aws-sdk/lib-storage
                        (same part size and parts in parallel); goal >= 0.8
  s3_get_vs_direct      1 GiB GET through the site / GetObject of the same size; goal >= 0.8
  small_files_s3_per_s  1000 files of 10 KB through POST /api/v1/data/batch (100 per request); goal >= 500

Each ratio is the median of --rounds rounds (default 3) in which the two sides alternate which goes
first. --quick: 128 MiB and 300 files, 2 rounds. --json prints one JSON object on stdout.`;

const MiB = 1024 * 1024;
/** The site's resource settings, which the direct side copies. */
const PART_MIB = 16;
const PARTS_IN_PARALLEL = 4;

// The SDK's one-time notice that its releases after January 2027 need Node 22 (docs/storage.md).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean' },
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const quick = values.quick === true;
  const say = (line: string): void => {
    (values.json ? process.stderr : process.stdout).write(line + '\n');
  };
  const bigBytes = (quick ? 128 : 1024) * MiB;
  const smallFiles = quick ? 300 : 1000;
  const rounds = Number(values.rounds ?? (quick ? 2 : 3));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number, 1 or more');

  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-storage-'));
  await fs.chmod(root, 0o755);
  let pgServer: EmbeddedServer | undefined;
  let s3: S3Server | undefined;
  let site: ChildProcess | undefined;
  let direct: S3Client | undefined;
  try {
    s3 = await startS3Server({ dir: path.join(root, 's3') });
    say(`SeaweedFS S3 at ${s3.endpoint} (data in ${root}/s3)`);
    pgServer = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    const connection = await pgServer.database('bench_storage');
    await migrate(connection);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const password = randomBytes(18).toString('base64url');
    site = await startSiteProcess(
      'lsu',
      {
        DATABASE_URL: `postgresql://${encodeURIComponent(String(connection.user))}:${encodeURIComponent(String(connection.password))}@127.0.0.1:${connection.port}/${String(connection.database)}`,
        TRIBUTARY_DATA_DIR: path.join(root, 'data'),
        HOST: '127.0.0.1',
        PORT: String(port),
        SITE_ID: 'lsu',
        ADMIN_PASSWORD: password,
        LOG_LEVEL: 'error',
        PORTAL_DIR: path.join(root, 'no-portal'),
        ...s3ResourceEnv(s3, {
          bucket: 'bench-site',
          extra: { partSizeMiB: PART_MIB, partsInParallel: PARTS_IN_PARALLEL },
        }),
      },
      process.env.BENCH_SITE_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    );
    const token = await BenchClient.createWriteToken(httpTransport(url, 2), 'admin', password);
    const client = new BenchClient(httpTransport(url, 16), token);
    const home = await client.homePath();
    const dir = `${home}/bench-storage`;
    await client.makeCollection(dir);

    direct = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    await direct.send(new CreateBucketCommand({ Bucket: 'bench-direct' }));

    const source = path.join(root, 'big.bin');
    await writeRandomFile(source, bigBytes);
    // Warm both paths (SeaweedFS grows its volumes on the first writes of a bucket).
    await putThroughSite(url, token, `${dir}/warm.bin`, source, bigBytes);
    await putDirect(direct, 'warm.bin', source);

    const put = { site: [] as number[], direct: [] as number[] };
    const get = { site: [] as number[], direct: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      const name = `big-${round}.bin`;
      const sitePut = async (): Promise<void> => {
        const t0 = performance.now();
        await putThroughSite(url, token, `${dir}/${name}`, source, bigBytes);
        put.site.push((performance.now() - t0) / 1000);
      };
      const directPut = async (): Promise<void> => {
        const t0 = performance.now();
        await putDirect(direct!, name, source);
        put.direct.push((performance.now() - t0) / 1000);
      };
      const siteGet = async (): Promise<void> => {
        const t0 = performance.now();
        const n = await drain(await getThroughSite(url, token, `${dir}/${name}`));
        if (n !== bigBytes) throw new Error(`GET through the site gave ${n} bytes, not ${bigBytes}`);
        get.site.push((performance.now() - t0) / 1000);
      };
      const directGet = async (): Promise<void> => {
        const t0 = performance.now();
        const answer = await direct!.send(new GetObjectCommand({ Bucket: 'bench-direct', Key: name }));
        const n = await drain(answer.Body as Readable);
        if (n !== bigBytes) throw new Error(`GetObject gave ${n} bytes, not ${bigBytes}`);
        get.direct.push((performance.now() - t0) / 1000);
      };
      // Each side goes first in every other round.
      if (round % 2 === 0) {
        await sitePut();
        await directPut();
        await siteGet();
        await directGet();
      } else {
        await directPut();
        await sitePut();
        await directGet();
        await siteGet();
      }
      say(
        `round ${round + 1}: PUT site ${mibs(bigBytes, put.site.at(-1)!)} MiB/s, direct ${mibs(bigBytes, put.direct.at(-1)!)} MiB/s; ` +
          `GET site ${mibs(bigBytes, get.site.at(-1)!)} MiB/s, direct ${mibs(bigBytes, get.direct.at(-1)!)} MiB/s`,
      );
    }
    await fs.rm(source);

    // Small files: through the batch endpoint, 100 files per request, four requests at once.
    const files = Array.from({ length: smallFiles }, (_, i) => ({
      name: `f${String(i).padStart(5, '0')}.bin`,
      data: randomBytes(10 * 1024),
    }));
    const smallDir = `${dir}/small`;
    await client.makeCollection(smallDir);
    const batches: (typeof files)[] = [];
    for (let i = 0; i < files.length; i += 100) batches.push(files.slice(i, i + 100));
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < batches.length) await client.putBatch(smallDir, batches[next++]!);
      }),
    );
    const smallSeconds = (performance.now() - t0) / 1000;

    const ratio = (sides: { site: number[]; direct: number[] }): number =>
      median(sides.site.map((s, i) => sides.direct[i]! / s));
    const figures = {
      s3_put_vs_direct: round3(ratio(put)),
      s3_get_vs_direct: round3(ratio(get)),
      small_files_s3_per_s: Math.round(smallFiles / smallSeconds),
      bytes: bigBytes,
      rounds,
      put_site_mib_s: put.site.map((s) => mibs(bigBytes, s)),
      put_direct_mib_s: put.direct.map((s) => mibs(bigBytes, s)),
      get_site_mib_s: get.site.map((s) => mibs(bigBytes, s)),
      get_direct_mib_s: get.direct.map((s) => mibs(bigBytes, s)),
      small_files: smallFiles,
      small_files_seconds: round3(smallSeconds),
      part_mib: PART_MIB,
      parts_in_parallel: PARTS_IN_PARALLEL,
      seaweedfs: '4.53 (github.com/seaweedfs/seaweedfs v0.0.0-20261109003541-7506e5f91cd6)',
    };
    if (values.json) console.log(JSON.stringify(figures));
    else {
      say(`s3_put_vs_direct      ${figures.s3_put_vs_direct} (goal >= 0.8; median of ${rounds} rounds)`);
      say(`s3_get_vs_direct      ${figures.s3_get_vs_direct} (goal >= 0.8)`);
      say(
        `small_files_s3_per_s  ${figures.small_files_s3_per_s} (goal >= 500; ${smallFiles} x 10 KB in ${figures.small_files_seconds} s)`,
      );
    }
  } finally {
    direct?.destroy();
    if (site) await stopSiteProcess(site).catch(() => undefined);
    await pgServer?.stop().catch(() => undefined);
    await s3?.close().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** PUT of a file through the site, streamed from disk (what `curl -T` does). */
function putThroughSite(
  url: string,
  token: string,
  objectPath: string,
  file: string,
  size: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/v1/data?path=${encodeURIComponent(objectPath)}&overwrite=true`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/octet-stream',
        'content-length': String(size),
      },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.once('end', () =>
        res.statusCode === 200 || res.statusCode === 201
          ? resolve()
          : reject(new Error(`PUT ${objectPath}: ${res.statusCode} ${text}`)),
      );
    });
    req.once('error', reject);
    createReadStream(file, { highWaterMark: MiB }).pipe(req);
  });
}

function putDirect(client: S3Client, key: string, file: string): Promise<unknown> {
  return new Upload({
    client,
    params: { Bucket: 'bench-direct', Key: key, Body: createReadStream(file, { highWaterMark: MiB }) },
    partSize: PART_MIB * MiB,
    queueSize: PARTS_IN_PARALLEL,
  }).done();
}

function getThroughSite(url: string, token: string, objectPath: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/api/v1/data?path=${encodeURIComponent(objectPath)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${objectPath}: ${res.statusCode}`));
      } else resolve(res);
    });
    req.once('error', reject);
  });
}

async function drain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += (chunk as Buffer).length;
  return n;
}

const mibs = (bytes: number, seconds: number): number => Math.round((bytes / MiB / seconds) * 10) / 10;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
