import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';

/** Below this many files an fsync each costs less than starting `sync -f`. */
const FLUSH_MIN_FILES = 8;

/**
 * Makes many freshly written files durable at once. One `sync -f` (syncfs(2): the whole file
 * system's dirty data, in one journal commit) costs about as much as a few fsyncs, where an fsync
 * per file costs a journal commit each: for a batch of small copies that is the difference between
 * hundreds and thousands of files per second (docs/placement.md, "Small files"). Where `sync -f`
 * is missing or fails, or for a few files, each file is fsynced instead.
 */
export class FileSystemFlush {
  private usable: boolean | undefined;

  constructor(private readonly dir: string) {}

  async files(paths: readonly string[]): Promise<void> {
    if (paths.length >= FLUSH_MIN_FILES && (await this.flushAll())) return;
    await Promise.all(paths.map(fsyncFile));
  }

  /** One syncfs of the file system holding `dir`; false when it is not available here. */
  private async flushAll(): Promise<boolean> {
    if (this.usable === false) return false;
    const ok = await new Promise<boolean>((resolve) =>
      execFile('sync', ['-f', this.dir], { timeout: 60_000 }, (err) => resolve(!err)),
    );
    // Once it worked it stays the way; a later failure (an I/O error) falls back for this call.
    this.usable ??= ok;
    return ok;
  }
}

async function fsyncFile(file: string): Promise<void> {
  const handle = await fs.open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
