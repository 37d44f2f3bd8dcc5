import { readFileSync, statSync } from 'node:fs';
import { inspect } from 'node:util';
import path from 'node:path';
import { z } from 'zod';
import { parseByteSize } from '../config/config';

/**
 * A site's storage resources, from the environment (docs/storage.md, "Settings"):
 *
 * - `STORAGE_RESOURCES`: a JSON array of resources besides the built-in local one, which is named
 *   `default` and lives in the site's storage directory. Each is `{ "name", "kind": "s3", "endpoint",
 *   "bucket", "region"?, "prefix"?, "forcePathStyle"?, "createBucket"?, "credentialsFile"?,
 *   "partSizeMiB"?, "partsInParallel"? }`, `{ "name", "kind": "local", "root" }` (`{site}` in `root` is SITE_ID), or `{ "name", "kind":
 *   "compound", "cache", "archive", "cacheMaxBytes" }`: a local cache resource in front of an archive
 *   resource (local or s3), both named in the same array (docs/storage.md, "Compound resources").
 * - `STORAGE_DEFAULT_RESOURCE`: the resource new bytes go to (default `default`).
 *
 * An s3 resource's keys never come from the catalog or the API: either `credentialsFile`, a file
 * only its owner may read or write (mode 0600 or stricter) holding `access_key_id=...` and
 * `secret_access_key=...` lines, or the environment variables `STORAGE_<NAME>_ACCESS_KEY_ID` and
 * `STORAGE_<NAME>_SECRET_ACCESS_KEY` (the name upper-cased, `-` as `_`).
 */

export const DEFAULT_RESOURCE = 'default';

/** An s3 resource's keys: never printed, logged or serialised. */
export class S3Credentials {
  readonly #accessKeyId: string;
  readonly #secretAccessKey: string;

  constructor(accessKeyId: string, secretAccessKey: string) {
    this.#accessKeyId = accessKeyId;
    this.#secretAccessKey = secretAccessKey;
  }

  reveal(): { accessKeyId: string; secretAccessKey: string } {
    return { accessKeyId: this.#accessKeyId, secretAccessKey: this.#secretAccessKey };
  }

  toJSON(): string {
    return '[credentials]';
  }

  [inspect.custom](): string {
    return '[credentials]';
  }
}

export interface S3ResourceSettings {
  endpoint: string;
  bucket: string;
  region: string;
  /** Prepended to every object name (several sites may share a bucket). */
  prefix: string;
  forcePathStyle: boolean;
  /** Make the bucket at start when it is missing (test and single-tenant stores). */
  createBucket: boolean;
  /** Size of each part of a multipart upload. */
  partSizeMiB: number;
  /** Parts of one multipart upload sent at once. */
  partsInParallel: number;
}

export type ResourceSpec =
  | { name: string; kind: 'local'; root: string }
  | { name: string; kind: 's3'; settings: S3ResourceSettings; credentials: S3Credentials }
  | CompoundResourceSpec;

/**
 * A compound resource: new bytes land in `cache` (a local resource) and are copied to `archive` (a
 * local or s3 resource) in the background; the cache keeps at most `cacheMaxBytes`, evicting only
 * what is verified in the archive. Its parts are resources of their own, used only through it.
 */
export interface CompoundResourceSpec {
  name: string;
  kind: 'compound';
  cache: string;
  archive: string;
  cacheMaxBytes: number;
}

export interface StorageConfig {
  /** Every resource of this site, the built-in local one first. */
  resources: ResourceSpec[];
  /** The name of the resource new bytes go to. */
  defaultResource: string;
  /** Time between checks of every resource (STORAGE_CHECK_SECONDS; 0: only on failures). */
  checkIntervalMs: number;
  /** Time between compound resources' background passes (STORAGE_COMPOUND_PASS_MS). */
  compoundPassMs: number;
}

const NAME = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,31}$/, 'must be 1-32 lower-case letters, digits or "-", starting with a letter');

const S3Schema = z
  .object({
    name: NAME,
    kind: z.literal('s3'),
    endpoint: z.string().url(),
    bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid S3 bucket name'),
    region: z.string().min(1).default('us-east-1'),
    prefix: z
      .string()
      .regex(/^([A-Za-z0-9._-]+\/)*$/, 'must be empty or path segments each ending with "/"')
      .default(''),
    forcePathStyle: z.boolean().default(true),
    createBucket: z.boolean().default(false),
    credentialsFile: z.string().min(1).optional(),
    partSizeMiB: z.number().int().min(5).max(512).default(16),
    partsInParallel: z.number().int().min(1).max(32).default(4),
  })
  .strict();

const LocalSchema = z.object({ name: NAME, kind: z.literal('local'), root: z.string().min(1) }).strict();

/** `1073741824`, `"200GiB"`, `"500MB"`, `"10G"`: bytes (parseByteSize, as CACHE_MAX_BYTES). */
const BYTES = z.union([
  z.number().int().min(1),
  z.string().transform((text, ctx) => {
    const bytes = parseByteSize(text);
    if (bytes === null || bytes < 1) {
      ctx.addIssue({ code: 'custom', message: 'must be a number of bytes such as 1073741824 or "200GiB"' });
      return z.NEVER;
    }
    return bytes;
  }),
]);

const CompoundSchema = z
  .object({ name: NAME, kind: z.literal('compound'), cache: NAME, archive: NAME, cacheMaxBytes: BYTES })
  .strict();

const ResourcesSchema = z.array(z.discriminatedUnion('kind', [S3Schema, LocalSchema, CompoundSchema]));

export class StorageConfigError extends Error {}

/**
 * Reads the resources from `env`; throws StorageConfigError with every problem (never a secret).
 * `storageRoot` is the built-in local resource's directory; relative `root`s are taken from the
 * working directory.
 */
export function loadStorageConfig(env: NodeJS.ProcessEnv, storageRoot: string): StorageConfig {
  const resources: ResourceSpec[] = [{ name: DEFAULT_RESOURCE, kind: 'local', root: storageRoot }];
  const problems: string[] = [];
  const raw = env.STORAGE_RESOURCES?.trim();
  if (raw) {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (err) {
      throw new StorageConfigError(`STORAGE_RESOURCES: not JSON (${(err as Error).message})`);
    }
    const parsed = ResourcesSchema.safeParse(json);
    if (!parsed.success) {
      throw new StorageConfigError(
        parsed.error.issues.map((i) => `STORAGE_RESOURCES.${i.path.join('.')}: ${i.message}`).join('\n'),
      );
    }
    for (const [i, r] of parsed.data.entries()) {
      if (resources.some((o) => o.name === r.name)) {
        problems.push(
          `STORAGE_RESOURCES.${i}.name: "${r.name}" is used twice (or is the built-in local one)`,
        );
        continue;
      }
      if (r.kind === 'local') {
        // `{site}` in a root is the site's id: one setting serves several sites on one machine.
        const root = r.root.replaceAll('{site}', env.SITE_ID?.trim() || 'lsu');
        resources.push({ name: r.name, kind: 'local', root: path.resolve(root) });
        continue;
      }
      if (r.kind === 'compound') {
        resources.push({ ...r });
        continue;
      }
      const credentials = s3Credentials(env, r.name, r.credentialsFile, problems);
      if (!credentials) continue;
      const { name, credentialsFile: _file, kind: _kind, ...settings } = r;
      resources.push({ name, kind: 's3', settings, credentials });
    }
  }
  const defaultResource = env.STORAGE_DEFAULT_RESOURCE?.trim() || DEFAULT_RESOURCE;
  if (!resources.some((r) => r.name === defaultResource))
    problems.push(`STORAGE_DEFAULT_RESOURCE: "${defaultResource}" is not one of the resources`);
  checkCompounds(resources, defaultResource, problems);
  const check = Number(env.STORAGE_CHECK_SECONDS ?? '15');
  if (!Number.isFinite(check) || check < 0)
    problems.push('STORAGE_CHECK_SECONDS: must be a number of seconds, 0 or more');
  const pass = Number(env.STORAGE_COMPOUND_PASS_MS ?? '1000');
  if (!Number.isInteger(pass) || pass < 10)
    problems.push('STORAGE_COMPOUND_PASS_MS: must be a whole number of milliseconds, 10 or more');
  if (problems.length > 0) throw new StorageConfigError(problems.join('\n'));
  return { resources, defaultResource, checkIntervalMs: Math.round(check * 1000), compoundPassMs: pass };
}

/**
 * A compound's cache must be a local resource and its archive a local or s3 one, two different
 * resources that no other compound uses and that are not the default (their bytes are the
 * compound's, reached only through it).
 */
function checkCompounds(resources: ResourceSpec[], defaultResource: string, problems: string[]): void {
  const used = new Map<string, string>();
  for (const [i, r] of resources.entries()) {
    if (r.kind !== 'compound') continue;
    const at = `STORAGE_RESOURCES.${i - 1}`;
    for (const part of ['cache', 'archive'] as const) {
      const name = r[part];
      const target = resources.find((o) => o.name === name);
      if (!target) problems.push(`${at}.${part}: "${name}" is not one of the resources`);
      else if (target.kind === 'compound')
        problems.push(`${at}.${part}: "${name}" is a compound resource itself`);
      else if (part === 'cache' && target.kind !== 'local')
        problems.push(`${at}.cache: "${name}" must be a local resource (it is ${target.kind})`);
      else if (used.has(name))
        problems.push(`${at}.${part}: "${name}" is already a part of the compound "${used.get(name)}"`);
      else if (name === defaultResource)
        problems.push(`${at}.${part}: "${name}" is STORAGE_DEFAULT_RESOURCE; make the compound the default`);
      used.set(name, r.name);
    }
    if (r.cache === r.archive) problems.push(`${at}.archive: must be another resource than the cache`);
  }
}

/** The compound resource that `name` is a part of, if any. */
export function compoundOf(resources: readonly ResourceSpec[], name: string): string | undefined {
  return resources.find((r) => r.kind === 'compound' && (r.cache === name || r.archive === name))?.name;
}

/** The environment variables holding an s3 resource's keys. */
export function credentialVariables(name: string): { accessKeyId: string; secretAccessKey: string } {
  const stem = `STORAGE_${name.toUpperCase().replace(/-/g, '_')}`;
  return { accessKeyId: `${stem}_ACCESS_KEY_ID`, secretAccessKey: `${stem}_SECRET_ACCESS_KEY` };
}

function s3Credentials(
  env: NodeJS.ProcessEnv,
  name: string,
  file: string | undefined,
  problems: string[],
): S3Credentials | undefined {
  if (file !== undefined) {
    let mode: number;
    let text: string;
    try {
      mode = statSync(file).mode;
      text = readFileSync(file, 'utf8');
    } catch (err) {
      problems.push(
        `resource ${name}: cannot read credentialsFile ${file}: ${(err as NodeJS.ErrnoException).code}`,
      );
      return undefined;
    }
    if ((mode & 0o077) !== 0) {
      problems.push(
        `resource ${name}: credentialsFile ${file} may be read by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
      );
      return undefined;
    }
    const values = new Map<string, string>();
    for (const line of text.split(/\r?\n/)) {
      const m = /^\s*(?:aws_)?([a-z_]+)\s*=\s*(.*?)\s*$/i.exec(line);
      if (m && !line.trim().startsWith('#')) values.set(m[1]!.toLowerCase(), m[2]!);
    }
    const id = values.get('access_key_id');
    const secret = values.get('secret_access_key');
    if (!id || !secret) {
      problems.push(
        `resource ${name}: credentialsFile ${file} needs access_key_id= and secret_access_key= lines`,
      );
      return undefined;
    }
    return new S3Credentials(id, secret);
  }
  const vars = credentialVariables(name);
  const id = env[vars.accessKeyId];
  const secret = env[vars.secretAccessKey];
  if (!id || !secret) {
    problems.push(
      `resource ${name}: set ${vars.accessKeyId} and ${vars.secretAccessKey}, or "credentialsFile" (mode 0600)`,
    );
    return undefined;
  }
  return new S3Credentials(id, secret);
}

/** What the catalog records of a resource: its kind and where it is, never its keys. */
export function catalogEntryOf(spec: ResourceSpec): {
  name: string;
  driver: 'local' | 's3' | 'compound';
  rootPath: string;
  settings: Record<string, string | number | boolean>;
} {
  if (spec.kind === 'local') return { name: spec.name, driver: 'local', rootPath: spec.root, settings: {} };
  if (spec.kind === 'compound')
    return {
      name: spec.name,
      driver: 'compound',
      rootPath: `compound://${spec.cache}+${spec.archive}`,
      settings: { cache: spec.cache, archive: spec.archive, cacheMaxBytes: spec.cacheMaxBytes },
    };
  const s = spec.settings;
  return {
    name: spec.name,
    driver: 's3',
    rootPath: `s3://${s.bucket}/${s.prefix}`,
    settings: { endpoint: s.endpoint, bucket: s.bucket, region: s.region, prefix: s.prefix },
  };
}
