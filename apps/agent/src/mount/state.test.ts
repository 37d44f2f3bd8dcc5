import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readMountStates, removeMountState, writeMountState, type MountState } from './state';

describe('mount state files', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });

  const state = (over: Partial<MountState>): MountState => ({
    id: 'abcd1234',
    pid: process.pid,
    mountpoint: '/mnt/x',
    remote: '/',
    site: 'http://127.0.0.1:8080',
    state: 'mounted',
    startedAt: '2026-11-21T20:00:00.000Z',
    updatedAt: '2026-11-21T20:00:00.000Z',
    stats: { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 },
    ...over,
  });

  it('writes atomically, lists oldest first, reports a vanished process as failed, removes', async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), 'tributary-state-'));
    dirs.push(home);
    expect(await readMountStates(home)).toEqual([]);
    await writeMountState(home, state({ id: 'bbbb', startedAt: '2026-11-21T21:00:00.000Z' }));
    // A pid that cannot be running.
    await writeMountState(home, state({ id: 'aaaa', pid: 2 ** 22 + 17 }));
    expect(await readdir(path.join(home, 'mounts'))).toEqual(
      expect.arrayContaining(['aaaa.json', 'bbbb.json']),
    );
    expect((await readdir(path.join(home, 'mounts'))).some((n) => n.endsWith('.tmp'))).toBe(false);
    const states = await readMountStates(home);
    expect(states.map((s) => [s.id, s.state])).toEqual([
      ['aaaa', 'failed'],
      ['bbbb', 'mounted'],
    ]);
    expect(states[0]?.lastError).toMatch(/gone/);
    await removeMountState(home, 'aaaa');
    expect((await readMountStates(home)).map((s) => s.id)).toEqual(['bbbb']);
  });
});
