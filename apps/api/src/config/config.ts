import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { loadStorageConfig, StorageConfigError, type StorageConfig } from '../storage/resource-config';

/**
 * Every setting of a site, read from the environment once at start-up. The README's settings
 * table documents each of these; keep the two in step.
 */
const EnvSchema = z.object({
  DATABASE_URL: z.string().url().optional(),
  TRIBUTARY_DATA_DIR: z.string().default('.data'),
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  PUBLIC_URL: z.string().url().optional(),
  SITE_ID: z
    .string()
    .regex(/^[a-z][a-z0-9-]{1,31}$/, 'must be 2-32 lower-case letters, digits or "-"')
    .default('lsu'),
  SITE_NAME: z.string().optional(),
  SITE_INDEX: z.coerce.number().int().min(1).max(32767).default(1),
  ADMIN_USERNAME: z.string().default('admin'),
  ADMIN_PASSWORD: z.string().min(12).optional(),
  SESSION_TTL_HOURS: z.coerce.number().positive().default(12),
  LOGIN_RATE_LIMIT: z.coerce.number().int().positive().default(10),
  LOGIN_RATE_WINDOW_SECONDS: z.coerce.number().int().positive().default(60),
  LOGIN_ADDRESS_RATE_LIMIT: z.coerce.number().int().positive().default(30),
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.every(isProxySpec),
      'must be a comma-separated list of IP addresses, CIDR ranges (10.0.0.0/8) or loopback, linklocal, uniquelocal',
    ),
  METRICS_TOKEN: z
    .string()
    .min(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)')
    .optional(),
  HTTP_HEADERS_TIMEOUT_SECONDS: z.coerce.number().positive().default(60),
  HTTP_REQUEST_TIMEOUT_SECONDS: z.coerce.number().nonnegative().default(0),
  HTTP_IDLE_TIMEOUT_SECONDS: z.coerce.number().positive().default(300),
  MAX_UPLOAD_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 ** 4),
  COOKIE_SECURE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  LOG_FORMAT: z.enum(['json', 'text']).default('text'),
  LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
  PORTAL_DIR: z.string().optional(),
  REPLICATION_PEERS: z.string().optional(),
  REPLICATION_CYCLE_SECONDS: z.coerce.number().positive().max(86_400).default(30),
  REPLICATION_RETENTION_HOURS: z.coerce.number().positive().default(168),
  CONFLICT_DEADLINE_HOURS: z.coerce.number().positive().max(8760).default(24),
  REPLICATION_ENABLED: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  JOIN_FROM: z.string().optional(),
  PLACEMENT_ENABLED: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  PLACEMENT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  PLACEMENT_BANDWIDTH_MIBS: z.coerce.number().nonnegative().default(0),
  PLACEMENT_INTERVAL_MS: z.coerce.number().int().min(50).max(3_600_000).default(2000),
  SCRUB_RATE_MIBS: z.coerce.number().nonnegative().default(50),
  SCRUB_INTERVAL_MS: z.coerce.number().int().min(50).max(86_400_000).default(60_000),
  SCRUB_REVERIFY_HOURS: z.coerce.number().nonnegative().max(87_600).default(168),
  PEER_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(1000),
  PEER_DOWN_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
  CACHE_MAX_BYTES: z
    .string()
    .default('0')
    .transform((v, ctx) => {
      const bytes = parseByteSize(v);
      if (bytes === null)
        ctx.addIssue({
          code: 'custom',
          message: 'must be a number of bytes, optionally with KiB, MiB, GiB or TiB',
        });
      return bytes ?? 0;
    }),
});

/** `1073741824`, `512MiB`, `10 GiB`, `1.5TiB` (binary units; K, M, G, T alone mean the same): bytes, or null. */
export function parseByteSize(value: string): number | null {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:([KMGT])(?:i?B)?|B)?\s*$/i.exec(value);
  if (!m) return null;
  const unit = m[2] ? 1024 ** ('KMGT'.indexOf(m[2].toUpperCase()) + 1) : 1;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** One peer site: where its API is and the secret the two sites share to sign requests. */
const PeerSchema = z.object({
  id: z.string().regex(/^[a-z][a-z0-9-]{1,31}$/, 'must be a site id'),
  url: z.string().url(),
  key: z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)'),
});
export type PeerConfig = z.infer<typeof PeerSchema>;

export interface SiteConfig {
  databaseUrl?: string;
  dataDir: string;
  storageRoot: string;
  /** The storage resources (STORAGE_RESOURCES, STORAGE_DEFAULT_RESOURCE; docs/storage.md). */
  storage: StorageConfig;
  host: string;
  port: number;
  publicUrl?: string;
  siteId: string;
  siteName: string;
  siteIndex: number;
  adminUsername: string;
  adminPassword?: string;
  sessionTtlMs: number;
  loginRateLimit: number;
  loginRateWindowMs: number;
  /** Login attempts per client address (any usernames) within the window. */
  loginAddressRateLimit: number;
  /** Addresses whose X-Forwarded-For is believed (express's `trust proxy`); empty: none. */
  trustedProxies: string[];
  /** Bearer secret a Prometheus scraper may use for /metrics instead of an administrator's token. */
  metricsToken?: string;
  http: {
    /** Time to receive a request's headers. */
    headersTimeoutMs: number;
    /** Time to receive a whole request, 0 for none (uploads may take hours). */
    requestTimeoutMs: number;
    /** Longest pause while a request body is being received. */
    idleTimeoutMs: number;
  };
  maxUploadBytes: number;
  cookieSecure: boolean;
  logFormat: 'json' | 'text';
  logLevel: 'error' | 'warn' | 'log' | 'debug' | 'verbose';
  portalDir?: string;
  replication: {
    enabled: boolean;
    peers: PeerConfig[];
    cycleMs: number;
    retentionMs: number;
    /** Peer whose catalog a new site copies before it takes part in the cycle. */
    joinFrom?: string;
    /** How long people have to decide a conflict before its provisional winner is final. */
    conflictDeadlineMs: number;
  };
  /** Copies at several sites (docs/placement.md, "Settings"). */
  placement: {
    /** Whether this site runs the mover and the scrub (rules and reads work either way). */
    enabled: boolean;
    /** Objects the mover copies at once. */
    concurrency: number;
    /** The mover's incoming bytes per second in MiB, 0 for no limit. */
    bandwidthMiBs: number;
    /** Time between the mover's passes over the catalog. */
    intervalMs: number;
    /** The scrub's hashing rate in MiB per second, 0 to switch it off. */
    scrubRateMiBs: number;
    /** Time between the scrub's passes. */
    scrubIntervalMs: number;
    /** A copy verified more recently than this is left out of a pass (each verification replicates). */
    scrubReverifyMs: number;
  };
  /** Cached copies (docs/caching.md). */
  cache: {
    /** Most bytes of cached copies this site keeps; 0: it keeps none (reads pass through). */
    maxBytes: number;
  };
  /** Reads and copies from other sites. */
  peerReads: {
    /** Longest wait for a peer to connect and send its answer's headers before the next is tried. */
    connectTimeoutMs: number;
    /** How long a peer that did not answer is tried last. */
    downMs: number;
  };
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): SiteConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid settings:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const peers = parsePeers(e.REPLICATION_PEERS, e.SITE_ID);
  if (e.JOIN_FROM && !peers.some((p) => p.id === e.JOIN_FROM)) {
    throw new ConfigError(`invalid settings:\n  JOIN_FROM: ${e.JOIN_FROM} is not one of REPLICATION_PEERS`);
  }
  if (e.HTTP_REQUEST_TIMEOUT_SECONDS > 0 && e.HTTP_HEADERS_TIMEOUT_SECONDS > e.HTTP_REQUEST_TIMEOUT_SECONDS) {
    throw new ConfigError(
      'invalid settings:\n  HTTP_HEADERS_TIMEOUT_SECONDS: must not exceed HTTP_REQUEST_TIMEOUT_SECONDS (or set that to 0)',
    );
  }
  const dataDir = path.resolve(e.TRIBUTARY_DATA_DIR);
  const storageRoot = path.join(dataDir, 'sites', e.SITE_ID, 'storage');
  let storage: StorageConfig;
  try {
    storage = loadStorageConfig(env, storageRoot);
  } catch (err) {
    if (err instanceof StorageConfigError)
      throw new ConfigError(`invalid settings:\n  ${err.message.split('\n').join('\n  ')}`);
    throw err;
  }
  return {
    databaseUrl: e.DATABASE_URL,
    dataDir,
    storageRoot,
    storage,
    host: e.HOST,
    port: e.PORT,
    publicUrl: e.PUBLIC_URL,
    siteId: e.SITE_ID,
    siteName: e.SITE_NAME ?? e.SITE_ID.toUpperCase(),
    siteIndex: e.SITE_INDEX,
    adminUsername: e.ADMIN_USERNAME,
    adminPassword: e.ADMIN_PASSWORD,
    sessionTtlMs: e.SESSION_TTL_HOURS * 3600_000,
    loginRateLimit: e.LOGIN_RATE_LIMIT,
    loginRateWindowMs: e.LOGIN_RATE_WINDOW_SECONDS * 1000,
    loginAddressRateLimit: e.LOGIN_ADDRESS_RATE_LIMIT,
    trustedProxies: e.TRUSTED_PROXIES,
    metricsToken: e.METRICS_TOKEN,
    http: {
      headersTimeoutMs: Math.round(e.HTTP_HEADERS_TIMEOUT_SECONDS * 1000),
      requestTimeoutMs: Math.round(e.HTTP_REQUEST_TIMEOUT_SECONDS * 1000),
      idleTimeoutMs: Math.round(e.HTTP_IDLE_TIMEOUT_SECONDS * 1000),
    },
    maxUploadBytes: e.MAX_UPLOAD_BYTES,
    cookieSecure: e.COOKIE_SECURE,
    logFormat: e.LOG_FORMAT,
    logLevel: e.LOG_LEVEL,
    portalDir: e.PORTAL_DIR,
    replication: {
      enabled: e.REPLICATION_ENABLED,
      peers,
      cycleMs: e.REPLICATION_CYCLE_SECONDS * 1000,
      retentionMs: e.REPLICATION_RETENTION_HOURS * 3600_000,
      joinFrom: e.JOIN_FROM,
      conflictDeadlineMs: Math.round(e.CONFLICT_DEADLINE_HOURS * 3600_000),
    },
    placement: {
      enabled: e.PLACEMENT_ENABLED,
      concurrency: e.PLACEMENT_CONCURRENCY,
      bandwidthMiBs: e.PLACEMENT_BANDWIDTH_MIBS,
      intervalMs: e.PLACEMENT_INTERVAL_MS,
      scrubRateMiBs: e.SCRUB_RATE_MIBS,
      scrubIntervalMs: e.SCRUB_INTERVAL_MS,
      scrubReverifyMs: Math.round(e.SCRUB_REVERIFY_HOURS * 3600_000),
    },
    peerReads: { connectTimeoutMs: e.PEER_CONNECT_TIMEOUT_MS, downMs: e.PEER_DOWN_MS },
    cache: { maxBytes: e.CACHE_MAX_BYTES },
  };
}

/** One entry of TRUSTED_PROXIES: what express's `trust proxy` (proxy-addr) accepts. */
function isProxySpec(spec: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(spec)) return true;
  const [address, bits, ...rest] = spec.split('/');
  const family = isIP(address ?? '');
  if (!family || rest.length) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n <= (family === 4 ? 32 : 128);
}

/** REPLICATION_PEERS is a JSON array of peers, inline or in a file (a path). */
function parsePeers(value: string | undefined, self: string): PeerConfig[] {
  if (!value?.trim()) return [];
  let text = value.trim();
  if (!text.startsWith('[')) {
    try {
      text = readFileSync(text, 'utf8');
    } catch (err) {
      throw new ConfigError(
        `invalid settings:\n  REPLICATION_PEERS: cannot read ${text}: ${(err as Error).message}`,
      );
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError(
      'invalid settings:\n  REPLICATION_PEERS: not valid JSON (expected [{"id","url","key"}, ...])',
    );
  }
  const parsed = z.array(PeerSchema).safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  REPLICATION_PEERS[${i.path.join('.')}]: ${i.message}`);
    throw new ConfigError(`invalid settings:\n${lines.join('\n')}`);
  }
  const ids = new Set<string>();
  for (const p of parsed.data) {
    if (p.id === self)
      throw new ConfigError(`invalid settings:\n  REPLICATION_PEERS: lists this site (${self}) itself`);
    if (ids.has(p.id))
      throw new ConfigError(`invalid settings:\n  REPLICATION_PEERS: ${p.id} is listed twice`);
    ids.add(p.id);
  }
  return parsed.data;
}

/**
 * The young generation of a site's JavaScript heap, per semi-space (V8's default is 16 MB). A bulk
 * request makes several hundred thousand short-lived objects; with 64 MB they mostly die before a
 * collection, which halved the site's garbage-collection time during a load (docs/metadata.md).
 */
export const SITE_SEMI_SPACE_MB = 64;

/** Size of each site's slice of the bigint id space: 2^48 ids, room for 32767 sites. */
export const ID_RANGE_SIZE = 2n ** 48n;

export function idRangeFor(siteIndex: number): { start: bigint; end: bigint } {
  const start = BigInt(siteIndex) * ID_RANGE_SIZE;
  return { start, end: start + ID_RANGE_SIZE - 1n };
}

export const SITE_CONFIG = Symbol('SITE_CONFIG');
