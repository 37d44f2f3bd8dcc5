import { describe, expect, it } from 'vitest';
import {
  describeUploadError,
  initialUploadState,
  nextToStart,
  percent,
  uploadReducer,
  uploadTotals,
  type UploadAction,
  type UploadState,
} from './uploadQueue';

function run(actions: UploadAction[], state: UploadState = initialUploadState): UploadState {
  return actions.reduce(uploadReducer, state);
}

const three: UploadAction = {
  type: 'add',
  files: [
    { id: 1, path: '/h/a', size: 100 },
    { id: 2, path: '/h/b', size: 200 },
    { id: 3, path: '/h/c', size: 0 },
  ],
};

describe('upload queue', () => {
  it('starts at most `concurrency` in queue order', () => {
    let s = run([three]);
    expect(nextToStart(s, 2).map((i) => i.id)).toEqual([1, 2]);
    s = run(
      [
        { type: 'start', id: 1 },
        { type: 'start', id: 2 },
      ],
      s,
    );
    expect(nextToStart(s, 2)).toEqual([]);
    s = run(
      [
        { type: 'progress', id: 1, loaded: 100 },
        { type: 'succeed', id: 1 },
      ],
      s,
    );
    expect(nextToStart(s, 2).map((i) => i.id)).toEqual([3]);
  });

  it('tracks per-file and overall progress, clamped to the size', () => {
    const s = run([three, { type: 'start', id: 1 }, { type: 'progress', id: 1, loaded: 150 }]);
    expect(s.items[0]!.loaded).toBe(100);
    expect(uploadTotals(s)).toMatchObject({ loaded: 100, total: 300, done: 0, active: 3, count: 3 });
  });

  it('cancels, retries, and retries a name clash as a replacement', () => {
    let s = run([
      three,
      { type: 'start', id: 1 },
      { type: 'progress', id: 1, loaded: 50 },
      { type: 'cancel', id: 1 },
    ]);
    expect(s.items[0]!.status).toBe('cancelled');
    expect(uploadTotals(s)).toMatchObject({ total: 200, count: 2 });
    s = run([{ type: 'retry', id: 1 }], s);
    expect(s.items[0]).toMatchObject({ status: 'queued', loaded: 0 });
    s = run(
      [
        { type: 'start', id: 1 },
        { type: 'fail', id: 1, code: 'NAME_TAKEN', message: 'exists' },
      ],
      s,
    );
    expect(s.items[0]).toMatchObject({ status: 'failed', error: { code: 'NAME_TAKEN' } });
    expect(uploadTotals(s).failed).toBe(1);
    s = run([{ type: 'retry', id: 1, overwrite: true }], s);
    expect(s.items[0]).toMatchObject({ status: 'queued', overwrite: true, error: undefined });
  });

  it('ignores transitions that do not apply', () => {
    const s = run([three]);
    expect(run([{ type: 'succeed', id: 1 }], s)).toBe(s);
    expect(run([{ type: 'progress', id: 1, loaded: 5 }], s)).toBe(s);
    expect(run([{ type: 'retry', id: 1 }], s)).toBe(s);
    expect(run([{ type: 'start', id: 99 }], s)).toBe(s);
  });

  it('clears finished and cancelled items only', () => {
    const s = run([
      three,
      { type: 'start', id: 1 },
      { type: 'succeed', id: 1 },
      { type: 'cancel', id: 2 },
      { type: 'clear-finished' },
    ]);
    expect(s.items.map((i) => i.id)).toEqual([3]);
  });
});

describe('percent and messages', () => {
  it('handles empty files', () => {
    expect(percent(0, 0)).toBe(100);
    expect(percent(50, 200)).toBe(25);
    expect(percent(300, 200)).toBe(100);
  });

  it('explains each kind of failure', () => {
    expect(describeUploadError('NAME_TAKEN', 409, 'x')).toMatch(/already exists/);
    expect(describeUploadError('PERMISSION_DENIED', 403, 'x')).toMatch(/may not write/);
    expect(describeUploadError('PAYLOAD_TOO_LARGE', 413, 'x')).toMatch(/quota/);
    expect(describeUploadError('NETWORK_ERROR', 0, 'x')).toMatch(/connection/);
    expect(describeUploadError('INTERNAL', 500, 'boom')).toMatch(/boom/);
  });
});
