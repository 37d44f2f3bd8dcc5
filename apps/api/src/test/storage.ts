import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { waitFor } from '@tributary/testkit';
import type { ResourceSpec } from '../storage/resource-config';
import type { TestSite } from './test-site';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

export { expectToWaitUntil, waitFor } from '@tributary/testkit';

/** Every file below `dir`, as paths relative to it. */
export async function filesBelow(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

/**
 * The site's storage holds exactly the bytes its catalog refers to: no stray staging files (given
 * a moment for uploads whose connection dropped), no orphaned versions, nothing missing.
 */
export async function expectStorageMatchesCatalog(site: TestSite): Promise<void> {
  const storage = site.config.storageRoot;
  const staging = path.join(storage, '.staging');
  const settled = await waitFor(async () => (await filesBelow(staging)).length === 0);
  expect(settled, `staging files left: ${(await filesBelow(staging)).join(', ')}`).toBe(true);
  const replicas = await site.query<{ physical_path: string }>('SELECT physical_path FROM replicas');
  const expected = replicas.rows.map((r) => r.physical_path).sort();
  const resource = site.config.storage.resources.find((r) => r.name === site.config.storage.defaultResource);
  if (resource?.kind === 's3') {
    // An object store has no staging area: an upload that did not commit removes its object, so
    // the bucket settles on exactly the catalog's keys.
    let actual: string[] = [];
    const matches = await waitFor(async () => {
      actual = await s3Keys(resource);
      return JSON.stringify(actual) === JSON.stringify(expected);
    });
    expect(matches ? expected : actual).toEqual(expected);
    return;
  }
  const actual = (await filesBelow(path.join(storage, 'objects'))).map((f) => path.basename(f)).sort();
  expect(actual).toEqual(expected);
}

/** Every key of an s3 resource (object names under its prefix), sorted. */
export async function s3Keys(resource: Extract<ResourceSpec, { kind: 's3' }>): Promise<string[]> {
  const { settings } = resource;
  const client = new S3Client({
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    credentials: resource.credentials.reveal(),
  });
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: settings.bucket,
          Prefix: settings.prefix,
          ContinuationToken: token,
        }),
      );
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key.slice(settings.prefix.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  } finally {
    client.destroy();
  }
}
