import { ApiError, ErrorCode } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { isTransient, TransportError } from './http';
import { ProgressMeter, type TransferProgress } from './progress';
import { backoffDelay, withRetry } from './retry';

const fast = { retries: 3, baseDelayMs: 1, maxDelayMs: 4 };

describe('retries', () => {
  it('counts no answer, 5xx and 429 as transient, other API errors as final', () => {
    expect(isTransient(new TransportError('reset'))).toBe(true);
    expect(isTransient(new ApiError(503, ErrorCode.ReplicaUnavailable, 'x'))).toBe(true);
    expect(isTransient(new ApiError(429, ErrorCode.RateLimited, 'x'))).toBe(true);
    expect(isTransient(new ApiError(422, ErrorCode.ChecksumMismatch, 'x'))).toBe(false);
    expect(isTransient(new Error('bug'))).toBe(false);
  });

  it('backs off exponentially with full jitter, capped', () => {
    const policy = { retries: 10, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(policy, n, () => 1))).toEqual([100, 200, 400, 800, 1000]);
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
  });

  it('retries transient failures until they pass, and reports each', async () => {
    let calls = 0;
    const heard: number[] = [];
    const result = await withRetry(
      () => (++calls < 3 ? Promise.reject(new TransportError('reset')) : Promise.resolve('ok')),
      fast,
      { onRetry: (_err, attempt) => heard.push(attempt) },
    );
    expect(result).toBe('ok');
    expect(heard).toEqual([1, 2]);
  });

  it('gives up after the configured retries, and at once on a final error', async () => {
    let calls = 0;
    await expect(
      withRetry(() => {
        calls++;
        return Promise.reject(new TransportError('down'));
      }, fast),
    ).rejects.toThrow('down');
    expect(calls).toBe(4);
    calls = 0;
    await expect(
      withRetry(() => {
        calls++;
        return Promise.reject(new ApiError(403, ErrorCode.PermissionDenied, 'no'));
      }, fast),
    ).rejects.toThrow('no');
    expect(calls).toBe(1);
  });

  it('stops waiting when cancelled', async () => {
    const controller = new AbortController();
    const pending = withRetry(
      () => Promise.reject(new TransportError('x')),
      { ...fast, baseDelayMs: 10_000 },
      {
        signal: controller.signal,
        onRetry: () => controller.abort(new Error('cancelled by user')),
      },
    );
    await expect(pending).rejects.toThrow('cancelled by user');
  });
});

describe('progress', () => {
  it('reports bytes, total and bandwidth over a sliding window', () => {
    let now = 0;
    const events: TransferProgress[] = [];
    const meter = new ProgressMeter(
      'transfer',
      100,
      (p) => events.push(p),
      3000,
      () => now,
    );
    now = 1000;
    meter.add(10);
    now = 2000;
    meter.add(10);
    expect(events.at(-1)).toEqual({ phase: 'transfer', bytes: 20, total: 100, bytesPerSecond: 10 });
    now = 10_000;
    meter.add(40);
    // Only the last few seconds count.
    expect(events.at(-1)!.bytesPerSecond).toBe(5);
    meter.reset(80);
    expect(events.at(-1)).toMatchObject({ bytes: 80, bytesPerSecond: 0 });
  });
});
