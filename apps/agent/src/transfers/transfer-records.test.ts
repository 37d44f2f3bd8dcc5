import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listTransfers, processAlive, TransferJournal } from './transfer-records';

describe('transfer records', () => {
  let home: string;
  beforeEach(async () => {
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-transfers-'));
  });
  afterEach(async () => {
    await fs.rm(home, { recursive: true, force: true });
  });

  it('records a transfer as it goes and when it ends', async () => {
    const env = { TRIBUTARY_AGENT_HOME: home };
    const journal = await TransferJournal.start(
      { direction: 'put', source: './run1', target: '/home/a/run1', site: 'lsu' },
      env,
      0,
    );
    journal.update({ filesTotal: 3, bytesTotal: 300, bytesDone: 100 });
    await journal.flush();
    expect(await listTransfers(env)).toMatchObject([
      { state: 'running', bytesDone: 100, filesTotal: 3, pid: process.pid },
    ]);
    await journal.finish('done');
    expect(await listTransfers(env)).toMatchObject([{ state: 'done' }]);
    expect((await fs.stat(path.join(home, 'transfers', `${journal.record.id}.json`))).mode & 0o777).toBe(
      0o600,
    );
  });

  it('shows a running transfer whose process is gone as interrupted', async () => {
    const env = { TRIBUTARY_AGENT_HOME: home };
    const dead = spawnSync(process.execPath, [
      '-e',
      'process.stdout.write(String(process.pid))',
    ]).stdout.toString();
    expect(processAlive(Number(dead))).toBe(false);
    await fs.mkdir(path.join(home, 'transfers'));
    await fs.writeFile(
      path.join(home, 'transfers', 'x.json'),
      JSON.stringify({ id: 'x', pid: Number(dead), state: 'running', startedAt: '2026-01-01T00:00:00Z' }),
    );
    await fs.writeFile(path.join(home, 'transfers', 'broken.json'), '{');
    expect(await listTransfers(env)).toMatchObject([{ id: 'x', state: 'interrupted' }]);
  });
});
