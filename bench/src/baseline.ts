import { randomUUID } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Body } from './client';

/** Printed with the results, so a reader knows what the API is compared against. */
export const BASELINE_DESCRIPTION =
  'baseline: the same bytes written straight to a local directory on the same file system, with the same ' +
  'concurrency; each file is written to a temp name, fsynced and renamed into place, which is the durability ' +
  "the API's local storage driver gives object bytes (it also hashes them and commits a catalog row; the baseline does neither)";

/** Writes one file as the local storage driver does: temp file, fsync, rename. */
export async function baselineWrite(dir: string, name: string, body: Body): Promise<void> {
  const temp = path.join(dir, `.${randomUUID()}`);
  const handle = await fs.open(temp, 'w');
  try {
    if (body.kind === 'bytes') {
      await handle.writeFile(body.data);
    } else {
      for await (const chunk of createReadStream(body.path, { highWaterMark: 1024 * 1024 })) {
        await handle.writeFile(chunk as Buffer);
      }
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temp, path.join(dir, name));
}
