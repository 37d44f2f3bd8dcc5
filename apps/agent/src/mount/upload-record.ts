import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { UploadSessionClient, UploadSessionObserver } from '@tributary/buffer';
import type { UploadSessionDto } from '@tributary/shared';
import { mountsDir, processAlive } from './state';

/** An upload session the mount opened at the site and has not seen end. */
export interface RecordedSession {
  id: string;
  /** The object it writes (for people reading the file). */
  path: string;
  openedAt: string;
  /** Nothing will complete it: it is to be removed from the site (a write that failed, a mount that died). */
  abandoned?: boolean;
}

/** `<agent home>/mounts/<mount id>.uploads.json`: the sessions a mount has open, kept next to its state file. */
export interface UploadRecord {
  mount: string;
  pid: number;
  /** The site the sessions are at (a session belongs to one site). */
  site: string;
  sessions: RecordedSession[];
}

const RECORD_SUFFIX = '.uploads.json';
/** A record taken over by the mount with this pid, while it adopts the sessions in it. */
const ADOPTING = /^(.+)\.uploads\.json\.adopting-(\d+)$/;

export const uploadRecordFile = (home: string, mountId: string): string =>
  path.join(mountsDir(home), `${mountId}${RECORD_SUFFIX}`);

/** True for the name of an upload record (not a mount's state file). */
export const isUploadRecordName = (name: string): boolean =>
  name.endsWith(RECORD_SUFFIX) || ADOPTING.test(name);

/**
 * Writes a file so that after a crash (of the process or the machine) it holds either its old
 * content or `text`: a temp file, flushed to disk, renamed over it, and the directory flushed.
 */
export async function writeFileDurably(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await fs.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
  await syncDir(dir);
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse to flush a directory; the rename is as durable as they make it.
  } finally {
    await handle.close();
  }
}

async function readRecord(file: string): Promise<UploadRecord | undefined> {
  try {
    const record = JSON.parse(await fs.readFile(file, 'utf8')) as UploadRecord;
    if (typeof record.pid !== 'number' || typeof record.site !== 'string' || !Array.isArray(record.sessions))
      return undefined;
    record.sessions = record.sessions.filter((s) => typeof s?.id === 'string');
    return record;
  } catch {
    return undefined;
  }
}

/** Site URLs compared without a trailing slash. */
const sameSite = (a: string, b: string): boolean => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * The mount's record of the upload sessions it has open at the site (the API's resumable uploads,
 * used by every write larger than one request): the connection tells it when a session opens
 * (recorded on disk before the session is used) and ends. What the record still holds after a
 * crash is removed from the site by the next mount of the same site with the same agent home
 * (`adoptLeftovers`, then `sweep`), instead of waiting for the site's 24-hour sweep. Sessions that
 * a failed write abandoned while the site did not answer are removed by `sweep` once it answers.
 */
export class UploadLedger implements UploadSessionObserver {
  private readonly sessions = new Map<string, RecordedSession>();
  /** Changes so far, and those on disk: the writes are queued and a write covers every change before it. */
  private version = 0;
  private saved = 0;
  private saving: Promise<void> = Promise.resolve();
  private sweeping: Promise<{ removed: number; left: number }> | undefined;
  readonly file: string;

  constructor(
    private readonly home: string,
    private readonly mountId: string,
    private readonly site: string,
    /** Hears failures to write the record (it never throws at the connection). */
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.file = uploadRecordFile(home, mountId);
  }

  /** The sessions recorded now (copies). */
  list(): RecordedSession[] {
    return [...this.sessions.values()].map((s) => ({ ...s }));
  }

  /** Sessions waiting to be removed from the site. */
  get abandonedCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.abandoned) n++;
    return n;
  }

  opened(session: UploadSessionDto): Promise<void> {
    this.sessions.set(session.id, {
      id: session.id,
      path: session.path,
      openedAt: new Date().toISOString(),
    });
    return this.persist();
  }

  ended(id: string): void {
    if (this.sessions.delete(id)) void this.persist();
  }

  abandoned(id: string): void {
    const session = this.sessions.get(id);
    if (!session || session.abandoned) return;
    session.abandoned = true;
    void this.persist();
  }

  /** Waits until the record on disk holds every change made so far. */
  flush(): Promise<void> {
    return this.persist();
  }

  /**
   * Takes over the records of mounts of the same site whose process is gone (a crash): their
   * sessions join this record as abandoned, and their files go. Returns how many sessions.
   */
  async adoptLeftovers(): Promise<number> {
    const dir = mountsDir(this.home);
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch {
      return 0;
    }
    let adopted = 0;
    for (const name of names) {
      const claimed = ADOPTING.exec(name);
      let from = path.join(dir, name);
      if (claimed) {
        // Another mount was adopting it when it died.
        if (processAlive(Number(claimed[2]))) continue;
      } else {
        if (!name.endsWith(RECORD_SUFFIX) || name === path.basename(this.file)) continue;
        const record = await readRecord(from);
        // Its process is gone (a pid equal to ours is another, earlier process's: ids differ).
        const gone = record && (record.pid === process.pid || !processAlive(record.pid));
        if (!record || !gone || !sameSite(record.site, this.site)) continue;
        // Taken over by renaming: of two mounts starting at once, one gets it.
        const to = `${from}.adopting-${process.pid}`;
        try {
          await fs.rename(from, to);
        } catch {
          continue;
        }
        from = to;
      }
      const record = await readRecord(from);
      if (record && !sameSite(record.site, this.site)) {
        // Not this site's: back under its own name for a mount of that site.
        await fs.rename(from, from.replace(/\.adopting-\d+$/, '')).catch(() => undefined);
        continue;
      }
      for (const session of record?.sessions ?? []) {
        if (this.sessions.has(session.id)) continue;
        this.sessions.set(session.id, { ...session, abandoned: true });
        adopted++;
      }
      // On disk in this record before the old one goes.
      await this.persist();
      await fs.rm(from, { force: true });
    }
    return adopted;
  }

  /**
   * Removes the abandoned sessions from the site (`DELETE /api/v1/uploads/<id>`; one the site no
   * longer has counts as removed). Those it cannot remove now (no answer, still busy) stay for the
   * next sweep. One sweep at a time.
   */
  sweep(client: UploadSessionClient): Promise<{ removed: number; left: number }> {
    this.sweeping ??= (async () => {
      let removed = 0;
      for (const session of this.list()) {
        if (!session.abandoned) continue;
        try {
          // Ends it in this record (through the observer) when it succeeds.
          await client.abort(session.id);
          this.ended(session.id);
          removed++;
        } catch {
          // Left for the next sweep.
        }
      }
      await this.persist();
      return { removed, left: this.abandonedCount };
    })().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /** The mount is stopping: the record stays only if sessions are left in it. */
  async close(): Promise<void> {
    await this.persist();
    if (this.sessions.size === 0) await fs.rm(this.file, { force: true });
  }

  private persist(): Promise<void> {
    const wanted = ++this.version;
    this.saving = this.saving.then(async () => {
      if (this.saved >= wanted) return;
      const version = this.version;
      try {
        if (this.sessions.size === 0) {
          await fs.rm(this.file, { force: true });
        } else {
          const record: UploadRecord = {
            mount: this.mountId,
            pid: process.pid,
            site: this.site,
            sessions: this.list(),
          };
          await writeFileDurably(this.file, JSON.stringify(record, null, 2) + '\n');
        }
        this.saved = version;
      } catch (err) {
        this.onError(err);
      }
    });
    return this.saving;
  }
}
