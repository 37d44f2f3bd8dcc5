import { isTransient } from './http';

export interface RetryPolicy {
  /** Further attempts after the first. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 5, baseDelayMs: 200, maxDelayMs: 10_000 };

/** Exponential backoff with full jitter: attempt n waits up to base × 2^n, at most max. */
export function backoffDelay(policy: RetryPolicy, attempt: number, random = Math.random): number {
  return Math.round(random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('the transfer was cancelled', 'AbortError');
}

/**
 * Runs `op` until it succeeds, retrying transient failures (see isTransient) with backoff.
 * `onRetry` hears each failure that will be retried.
 */
export async function withRetry<T>(
  op: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: { signal?: AbortSignal; onRetry?: (err: unknown, attempt: number) => void } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op(attempt);
    } catch (err) {
      if (options.signal?.aborted) throw abortReason(options.signal);
      if (!isTransient(err) || attempt >= policy.retries) throw err;
      options.onRetry?.(err, attempt + 1);
      await sleep(backoffDelay(policy, attempt), options.signal);
    }
  }
}
