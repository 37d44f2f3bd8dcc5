/**
 * The wide-area network between sites: Toxiproxy (github.com/Shopify/toxiproxy, built by
 * scripts/setup-toxiproxy.sh) started as a process of its own, one proxy per directed link, and the
 * faults a WAN has (latency, jitter, bandwidth limits, resets, cuts) set per link through its REST
 * API. Used by the replication fault tests, bench:wan and the `npm run wan` script (docs/wan.md).
 * No vitest here: the bench and the script run it from dist/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** What a link between two sites is like. Round trips are split evenly between the two directions. */
export interface WanProfile {
  /** Added round-trip time in milliseconds. */
  rttMs: number;
  /** Up to this many milliseconds more or less, per chunk and direction. */
  jitterMs: number;
  /** Fraction of connections reset by the peer (0 to 1). */
  resetFraction: number;
  /** Bandwidth of each connection in each direction, in kB/s (1000 bytes) (0 for loopback's). */
  bandwidthKBs: number;
}

/** The profiles of the issue: a campus, a state research network (the seed's), another continent. */
export const WAN_PROFILES = {
  campus: { rttMs: 1, jitterMs: 0, resetFraction: 0, bandwidthKBs: 0 },
  regional: { rttMs: 10, jitterMs: 0, resetFraction: 0, bandwidthKBs: 0 },
  intercontinental: { rttMs: 100, jitterMs: 5, resetFraction: 0.01, bandwidthKBs: 0 },
} as const satisfies Record<string, WanProfile>;

export type WanProfileName = keyof typeof WAN_PROFILES;

export function wanProfile(name: string): WanProfile {
  if (!Object.hasOwn(WAN_PROFILES, name)) {
    throw new Error(`no WAN profile "${name}": choose ${Object.keys(WAN_PROFILES).join(', ')}`);
  }
  return WAN_PROFILES[name as WanProfileName];
}

type Stream = 'upstream' | 'downstream';

interface Toxic {
  name: string;
  type: 'latency' | 'bandwidth' | 'reset_peer' | 'timeout' | 'slow_close' | 'limit_data' | 'slicer';
  stream: Stream;
  toxicity: number;
  attributes: Record<string, number>;
}

/** One directed link: clients connect to `host:port`, Toxiproxy forwards to the upstream. */
export interface WanLink {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  /** `http://host:port`, for HTTP peers. */
  readonly url: string;
  readonly upstream: string;
  /** Replaces the link's toxics with a profile's (and enables it). */
  setProfile(profile: WanProfile | WanProfileName): Promise<void>;
  /** Cuts the link: open connections are closed, new ones refused, until `restore`. */
  cut(): Promise<void>;
  /** Undoes `cut` and `blackhole` (the profile's other toxics stay). */
  restore(): Promise<void>;
  /** Connections stay open but no byte passes (a silent drop, like a dead router), until `restore`. */
  blackhole(): Promise<void>;
  /** Adds round-trip time on top of the profile, until `clearFaults`. */
  slow(rttMs: number, jitterMs?: number): Promise<void>;
  /** Limits each connection's bandwidth (both directions), until `clearFaults`. */
  limit(kbPerSecond: number): Promise<void>;
  /**
   * Resets connections with a TCP RST after `afterMs` (0: on their next data), open ones included,
   * for a `fraction` of connections, until `clearFaults`.
   */
  resetPeers(afterMs: number, fraction?: number): Promise<void>;
  /** Removes every fault added since the profile was set, and enables the link. */
  clearFaults(): Promise<void>;
  /** The toxics now on the link (profile and faults). */
  toxics(): Promise<Toxic[]>;
}

export interface Wan {
  /** Toxiproxy's API, `http://127.0.0.1:<port>`. */
  readonly apiUrl: string;
  /**
   * A new link to `upstream` (`http://host:port` or `host:port`), listening on `listenPort` (a free
   * port by default), with the WAN's default profile.
   */
  link(name: string, upstream: string, listenPort?: number): Promise<WanLink>;
  readonly links: WanLink[];
  /** Sets every link to a profile. */
  setProfile(profile: WanProfile | WanProfileName): Promise<void>;
  /** Removes every fault from every link (profiles stay). */
  clearFaults(): Promise<void>;
  close(): Promise<void>;
}

export interface WanOptions {
  /** The profile new links get (default `regional`). */
  profile?: WanProfile | WanProfileName;
  /** The toxiproxy-server binary (default: TOXIPROXY_SERVER, then the one setup built, then PATH). */
  binary?: string;
  /** Seed of Toxiproxy's random choices (jitter, toxicity), for reproducible runs. */
  seed?: number;
}

/**
 * Where toxiproxy-server is: TOXIPROXY_SERVER, else `.data/tools/toxiproxy/toxiproxy-server` in the
 * repository (scripts/setup-toxiproxy.sh), else `toxiproxy-server` on the PATH.
 */
export function toxiproxyBinary(): string {
  if (process.env.TOXIPROXY_SERVER) return process.env.TOXIPROXY_SERVER;
  const built = path.resolve(__dirname, '../../../.data/tools/toxiproxy/toxiproxy-server');
  if (existsSync(built)) return built;
  const onPath = (process.env.PATH ?? '')
    .split(path.delimiter)
    .map((dir) => path.join(dir, 'toxiproxy-server'))
    .find((p) => existsSync(p));
  if (onPath) return onPath;
  throw new Error(
    'toxiproxy-server not found: run `bash scripts/setup-toxiproxy.sh` (scripts/setup.sh does) or set TOXIPROXY_SERVER',
  );
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function asProfile(p: WanProfile | WanProfileName): WanProfile {
  return typeof p === 'string' ? wanProfile(p) : p;
}

/** The toxics of a profile: half the round trip each way, jitter, bandwidth, resets. */
export function profileToxics(profile: WanProfile): Toxic[] {
  const toxics: Toxic[] = [];
  // Toxiproxy counts whole milliseconds: an odd round trip puts the extra one downstream.
  const up = Math.floor(profile.rttMs / 2);
  const down = profile.rttMs - up;
  const jitter = Math.round(profile.jitterMs / 2);
  if (up > 0 || jitter > 0) toxics.push(latency('profile-latency-up', 'upstream', up, jitter));
  if (down > 0 || jitter > 0) toxics.push(latency('profile-latency-down', 'downstream', down, jitter));
  if (profile.bandwidthKBs > 0) {
    for (const stream of ['upstream', 'downstream'] as const)
      toxics.push({
        name: `profile-bandwidth-${stream}`,
        type: 'bandwidth',
        stream,
        toxicity: 1,
        attributes: { rate: profile.bandwidthKBs },
      });
  }
  if (profile.resetFraction > 0)
    toxics.push({
      name: 'profile-reset',
      type: 'reset_peer',
      stream: 'upstream',
      toxicity: profile.resetFraction,
      attributes: { timeout: 0 },
    });
  return toxics;
}

function latency(name: string, stream: Stream, ms: number, jitter: number): Toxic {
  return { name, type: 'latency', stream, toxicity: 1, attributes: { latency: ms, jitter } };
}

/** Starts a Toxiproxy server of its own on a free loopback port. */
export async function startWan(options: WanOptions = {}): Promise<Wan> {
  const binary = options.binary ?? toxiproxyBinary();
  const port = await freePort();
  const args = ['-host', '127.0.0.1', '-port', String(port)];
  if (options.seed !== undefined) args.push('-seed', String(options.seed));
  const child = spawn(binary, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LOG_LEVEL: process.env.TOXIPROXY_LOG_LEVEL ?? 'error' },
  });
  let log = '';
  child.stderr?.on('data', (c: Buffer) => {
    log = (log + c.toString('utf8')).slice(-20_000);
  });
  const apiUrl = `http://127.0.0.1:${port}`;
  const api = toxiproxyApi(apiUrl, () => log);
  try {
    await waitForApi(api, child, () => log);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const defaultProfile = asProfile(options.profile ?? 'regional');
  const links: WanLink[] = [];

  const link = async (name: string, upstream: string, listenPort?: number): Promise<WanLink> => {
    const target = upstream.replace(/^[a-z]+:\/\//, '').replace(/\/.*$/, '');
    const listen = `127.0.0.1:${listenPort ?? (await freePort())}`;
    const created = (await api('POST', '/proxies', { name, listen, upstream: target, enabled: true })) as {
      listen: string;
    };
    const listenPortNow = Number(created.listen.split(':').pop());
    const made = makeLink(api, name, '127.0.0.1', listenPortNow, target);
    await made.setProfile(defaultProfile);
    links.push(made);
    return made;
  };

  return {
    apiUrl,
    link,
    links,
    setProfile: async (profile) => {
      await Promise.all(links.map((l) => l.setProfile(profile)));
    },
    clearFaults: async () => {
      await Promise.all(links.map((l) => l.clearFaults()));
    },
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

type Api = (method: string, route: string, body?: unknown) => Promise<unknown>;

function toxiproxyApi(apiUrl: string, log: () => string): Api {
  return async (method, route, body) => {
    const res = await fetch(apiUrl + route, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) {
      throw new Error(
        `toxiproxy ${method} ${route}: ${res.status} ${text.slice(0, 300)}\n${log().slice(-2000)}`,
      );
    }
    if (!text) return undefined;
    return res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text;
  };
}

async function waitForApi(api: Api, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`toxiproxy-server exited (${child.exitCode ?? child.signalCode}): ${log()}`);
    try {
      await api('GET', '/version');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`toxiproxy-server did not answer within 10 s: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function makeLink(api: Api, name: string, host: string, port: number, upstream: string): WanLink {
  const base = `/proxies/${encodeURIComponent(name)}`;
  const list = async (): Promise<Toxic[]> => (await api('GET', `${base}/toxics`)) as Toxic[];
  const add = (t: Toxic): Promise<unknown> => api('POST', `${base}/toxics`, t);
  const remove = (toxic: string): Promise<unknown> =>
    api('DELETE', `${base}/toxics/${encodeURIComponent(toxic)}`);
  const removeWhere = async (keep: (t: Toxic) => boolean): Promise<void> => {
    for (const t of await list()) if (!keep(t)) await remove(t.name);
  };
  const replace = async (t: Toxic): Promise<void> => {
    if ((await list()).some((x) => x.name === t.name)) await remove(t.name);
    await add(t);
  };
  const enable = (enabled: boolean): Promise<unknown> => api('POST', base, { enabled });
  const isProfile = (t: Toxic): boolean => t.name.startsWith('profile-');
  return {
    name,
    host,
    port,
    url: `http://${host}:${port}`,
    upstream,
    setProfile: async (profile) => {
      await removeWhere(() => false);
      for (const t of profileToxics(asProfile(profile))) await add(t);
      await enable(true);
    },
    cut: async () => {
      await enable(false);
    },
    restore: async () => {
      await removeWhere((t) => t.name !== 'fault-blackhole');
      await enable(true);
    },
    blackhole: async () => {
      await replace({
        name: 'fault-blackhole',
        type: 'timeout',
        stream: 'upstream',
        toxicity: 1,
        attributes: { timeout: 0 },
      });
    },
    slow: async (rttMs, jitterMs = 0) => {
      const up = Math.floor(rttMs / 2);
      await replace(latency('fault-latency-up', 'upstream', up, Math.round(jitterMs / 2)));
      await replace(latency('fault-latency-down', 'downstream', rttMs - up, Math.round(jitterMs / 2)));
    },
    limit: async (kbPerSecond) => {
      for (const stream of ['upstream', 'downstream'] as const)
        await replace({
          name: `fault-bandwidth-${stream}`,
          type: 'bandwidth',
          stream,
          toxicity: 1,
          attributes: { rate: kbPerSecond },
        });
    },
    resetPeers: async (afterMs, fraction = 1) => {
      await replace({
        name: 'fault-reset',
        type: 'reset_peer',
        stream: 'upstream',
        toxicity: fraction,
        attributes: { timeout: afterMs },
      });
    },
    clearFaults: async () => {
      await removeWhere(isProfile);
      await enable(true);
    },
    toxics: list,
  };
}
