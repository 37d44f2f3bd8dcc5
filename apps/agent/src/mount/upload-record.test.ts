import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { UploadSessionDto } from '@tributary/shared';
import type { UploadSessionClient } from '@tributary/buffer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readMountFiles, writeMountState, type MountState } from './state';
import { UploadLedger, uploadRecordFile, type UploadRecord } from './upload-record';

const SITE = 'http://127.0.0.1:8080';
let home: string;

beforeEach(async () => {
  home = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-upload-record-'));
});
afterEach(async () => {
  await fs.rm(home, { recursive: true, force: true });
});

const session = (id: string, p = `/data/${id}.bin`) => ({ id, path: p }) as UploadSessionDto;

async function readRecord(mountId: string): Promise<UploadRecord | undefined> {
  try {
    return JSON.parse(await fs.readFile(uploadRecordFile(home, mountId), 'utf8')) as UploadRecord;
  } catch {
    return undefined;
  }
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const run = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(run.stdout.toString());
}

/** A stand-in for the API's sessions: abort answers as the test says, and ends the session in the ledger. */
function sessionsFake(ledger: UploadLedger, answer: (id: string) => 'ok' | 'gone' | 'silent') {
  const aborted: string[] = [];
  const client = {
    abort: (id: string) => {
      aborted.push(id);
      const a = answer(id);
      if (a === 'silent') {
        ledger.abandoned(id);
        return Promise.reject(new TypeError('fetch failed'));
      }
      ledger.ended(id);
      return Promise.resolve();
    },
  } as unknown as UploadSessionClient;
  return { client, aborted };
}

describe('UploadLedger', () => {
  it('records a session on disk before it is used, and forgets it when it ends', async () => {
    const ledger = new UploadLedger(home, 'aaaa', SITE);
    await ledger.opened(session('s1'));
    const record = await readRecord('aaaa');
    expect(record).toMatchObject({ mount: 'aaaa', pid: process.pid, site: SITE });
    expect(record!.sessions).toEqual([expect.objectContaining({ id: 's1', path: '/data/s1.bin' })]);
    await ledger.opened(session('s2'));
    ledger.ended('s1');
    await ledger.flush();
    expect((await readRecord('aaaa'))!.sessions.map((s) => s.id)).toEqual(['s2']);
    ledger.ended('s2');
    await ledger.flush();
    // Nothing open: no file.
    expect(await readRecord('aaaa')).toBeUndefined();
  });

  it('is not taken for a mount state file', async () => {
    const ledger = new UploadLedger(home, 'aaaa', SITE);
    await ledger.opened(session('s1'));
    const state: MountState = {
      id: 'aaaa',
      pid: process.pid,
      mountpoint: '/mnt/x',
      remote: '/',
      site: SITE,
      state: 'mounted',
      startedAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
      stats: { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 },
    };
    await writeMountState(home, state);
    expect((await readMountFiles(home)).map((s) => s.id)).toEqual(['aaaa']);
  });

  it('adopts the sessions of a dead mount of the same site and removes them from the site', async () => {
    const dead = deadPid();
    const write = (id: string, record: UploadRecord) =>
      fs.writeFile(uploadRecordFile(home, id), JSON.stringify(record));
    await fs.mkdir(path.join(home, 'mounts'), { recursive: true });
    await write('dead1', {
      mount: 'dead1',
      pid: dead,
      site: `${SITE}/`,
      sessions: [
        { id: 'x1', path: '/a', openedAt: '' },
        { id: 'x2', path: '/b', openedAt: '' },
      ],
    });
    // Another site's: left for a mount of that site.
    await write('dead2', {
      mount: 'dead2',
      pid: dead,
      site: 'http://127.0.0.1:9999',
      sessions: [{ id: 'y1', path: '/c', openedAt: '' }],
    });
    // A live mount's: not touched.
    await write('live', {
      mount: 'live',
      pid: process.ppid,
      site: SITE,
      sessions: [{ id: 'z1', path: '/d', openedAt: '' }],
    });

    const ledger = new UploadLedger(home, 'new1', SITE);
    expect(await ledger.adoptLeftovers()).toBe(2);
    expect(ledger.list()).toEqual([
      expect.objectContaining({ id: 'x1', abandoned: true }),
      expect.objectContaining({ id: 'x2', abandoned: true }),
    ]);
    // Recorded under the new mount before the old record went.
    expect((await readRecord('new1'))!.sessions.map((s) => s.id)).toEqual(['x1', 'x2']);
    expect(await readRecord('dead1')).toBeUndefined();
    expect(await readRecord('dead2')).toBeDefined();
    expect(await readRecord('live')).toBeDefined();

    // x1 is removed, x2 no longer exists at the site: both end.
    const { client, aborted } = sessionsFake(ledger, (id) => (id === 'x1' ? 'ok' : 'gone'));
    expect(await ledger.sweep(client)).toEqual({ removed: 2, left: 0 });
    expect(aborted).toEqual(['x1', 'x2']);
    expect(await readRecord('new1')).toBeUndefined();
  });

  it('keeps what it could not remove for the next sweep, and on disk across a stop', async () => {
    const ledger = new UploadLedger(home, 'm1', SITE);
    await ledger.opened(session('s1'));
    await ledger.opened(session('s2'));
    // s1's write failed while the site did not answer; s2 is still being written.
    ledger.abandoned('s1');
    const silent = sessionsFake(ledger, () => 'silent');
    expect(await ledger.sweep(silent.client)).toEqual({ removed: 0, left: 1 });
    expect(silent.aborted).toEqual(['s1']);
    await ledger.close();
    const record = await readRecord('m1');
    expect(record!.sessions).toEqual([
      expect.objectContaining({ id: 's1', abandoned: true }),
      expect.objectContaining({ id: 's2' }),
    ]);
    const answering = sessionsFake(ledger, () => 'ok');
    expect(await ledger.sweep(answering.client)).toEqual({ removed: 1, left: 0 });
    expect(answering.aborted).toEqual(['s1']);
  });

  it('a record whose pid is ours belongs to an earlier process (pids are reused)', async () => {
    await fs.mkdir(path.join(home, 'mounts'), { recursive: true });
    await fs.writeFile(
      uploadRecordFile(home, 'old'),
      JSON.stringify({ mount: 'old', pid: process.pid, site: SITE, sessions: [{ id: 'q', path: '/q' }] }),
    );
    const ledger = new UploadLedger(home, 'new', SITE);
    expect(await ledger.adoptLeftovers()).toBe(1);
  });
});
