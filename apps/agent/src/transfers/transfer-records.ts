import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentHome } from '../agent-home';
import { processAlive } from '../mount/state';

/**
 * Transfer records: every `trib put`/`trib get`/`trib cp` keeps one small JSON file in
 * `agentHome()/transfers/<id>.json`, rewritten at most every half second, so the local UI can show
 * transfers with their progress without talking to the process that runs them. A running entry
 * whose process is gone is shown as interrupted.
 */
export interface TransferRecord {
  id: string;
  pid: number;
  direction: 'put' | 'get' | 'cp';
  /** What was asked, e.g. `./run1 -> /home/alice/run1`. */
  source: string;
  target: string;
  site: string;
  state: 'running' | 'done' | 'failed' | 'interrupted';
  filesTotal: number;
  filesDone: number;
  bytesTotal: number;
  bytesDone: number;
  bytesPerSecond: number;
  startedAt: string;
  updatedAt: string;
  error?: string;
}

/** Most finished records kept; older ones are removed when a new transfer starts. */
const KEEP_FINISHED = 50;

export function transfersDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(agentHome(env), 'transfers');
}

/** Writes one transfer's record as it progresses (throttled) and when it ends. */
export class TransferJournal {
  readonly record: TransferRecord;
  private lastWrite = 0;
  private writing: Promise<void> = Promise.resolve();
  private readonly file: string;

  private constructor(
    record: TransferRecord,
    private readonly dir: string,
    private readonly intervalMs: number,
  ) {
    this.record = record;
    this.file = path.join(dir, `${record.id}.json`);
  }

  static async start(
    init: Pick<TransferRecord, 'direction' | 'source' | 'target' | 'site'>,
    env: NodeJS.ProcessEnv = process.env,
    intervalMs = 500,
  ): Promise<TransferJournal> {
    const dir = transfersDir(env);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await prune(dir).catch(() => undefined);
    const now = new Date().toISOString();
    const journal = new TransferJournal(
      {
        id: `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`,
        pid: process.pid,
        ...init,
        state: 'running',
        filesTotal: 0,
        filesDone: 0,
        bytesTotal: 0,
        bytesDone: 0,
        bytesPerSecond: 0,
        startedAt: now,
        updatedAt: now,
      },
      dir,
      intervalMs,
    );
    await journal.flush();
    return journal;
  }

  /** Updates the record; written to disk at most every `intervalMs`. */
  update(change: Partial<TransferRecord>): void {
    Object.assign(this.record, change);
    const now = Date.now();
    if (now - this.lastWrite >= this.intervalMs) void this.flush();
  }

  async finish(state: 'done' | 'failed' | 'interrupted', error?: string): Promise<void> {
    this.record.state = state;
    if (error) this.record.error = error;
    await this.flush();
  }

  flush(): Promise<void> {
    this.lastWrite = Date.now();
    this.record.updatedAt = new Date().toISOString();
    const text = JSON.stringify(this.record);
    this.writing = this.writing.then(() => writeAtomic(this.file, text)).catch(() => undefined);
    return this.writing;
  }
}

/** Every transfer record, newest first; running ones whose process has gone are marked interrupted. */
export async function listTransfers(env: NodeJS.ProcessEnv = process.env): Promise<TransferRecord[]> {
  const dir = transfersDir(env);
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  const records: TransferRecord[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    try {
      const record = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as TransferRecord;
      if (record.state === 'running' && !processAlive(record.pid)) record.state = 'interrupted';
      records.push(record);
    } catch {
      // Half-written or damaged: skip it.
    }
  }
  return records.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

async function prune(dir: string): Promise<void> {
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  // Ids start with a base-36 time, so name order is start order.
  const excess = names.length - KEEP_FINISHED;
  for (const name of names.slice(0, Math.max(0, excess))) {
    try {
      const record = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as TransferRecord;
      if (record.state === 'running' && processAlive(record.pid)) continue;
    } catch {
      // Unreadable: remove it.
    }
    await fs.rm(path.join(dir, name), { force: true });
  }
}

export async function writeAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, text, { mode });
  await fs.rename(tmp, file);
}

/** Re-exported for the transfer and mount commands: one check of a process everywhere. */
export { processAlive };
