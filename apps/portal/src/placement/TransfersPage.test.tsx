// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { MoverStatusDto } from '@tributary/shared';
import { cleanup, render, screen, within } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../api';
import { percentDone, TransfersPage } from './TransfersPage';

const STATUS: MoverStatusDto = {
  site: 'tulane',
  states: { pending: 3, copying: 1, good: 120, stale: 0, suspect: 0, failed: 1 },
  inFlight: [
    {
      path: '/p/big.bin',
      from: 'lsu',
      bytesDone: 512 * 1024,
      size: 2 * 1024 * 1024,
      startedAt: '2026-11-27T10:00:00Z',
    },
  ],
  failed: [{ path: '/p/bad.bin', error: 'lsu did not answer', attempts: 3, nextAttemptAt: null }],
  bytesPerSecond: 1024 * 1024,
  bytesTotal: 10 * 1024 * 1024,
  settings: { concurrency: 4, bandwidthMiBs: 0, scrubRateMiBs: 50 },
};

describe('TransfersPage (the mover, for administrators)', () => {
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('shows the copies per state, what is in flight with its progress, and failures', async () => {
    vi.spyOn(api, 'moverStatus').mockResolvedValue(STATUS);
    vi.spyOn(api, 'cacheStatus').mockResolvedValue({
      site: 'tulane',
      enabled: true,
      limitBytes: 10 * 1024 * 1024,
      usedBytes: 3 * 1024 * 1024,
      pinnedBytes: 1024 * 1024,
      copies: 7,
      hits: 42,
      misses: 5,
      bytesIn: 4 * 1024 * 1024,
      evictions: 2,
    });
    const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
    render(
      <QueryClientProvider client={queryClient}>
        <MemoryRouter>
          <TransfersPage />
        </MemoryRouter>
      </QueryClientProvider>,
    );
    expect((await screen.findByTestId('mover-rate')).textContent).toBe('1 MiB/s');
    const states = screen.getByRole('table', { name: 'Copies at this site per state' });
    expect(
      within(states)
        .getAllByRole('row')
        .map((r) => r.textContent),
    ).toEqual(['StateCopies', 'pending3', 'copying1', 'good120', 'stale0', 'suspect0', 'failed1']);
    const transfer = screen.getByTestId('transfer');
    expect(transfer.textContent).toContain('/p/big.bin');
    expect(transfer.textContent).toContain('512 KiB of 2 MiB');
    expect(within(transfer).getByRole('progressbar').getAttribute('value')).toBe('25');
    // The same progress as a bar chart (loaded on its own): its numbers, as screen readers get them.
    const bars = await screen.findByTestId('transfer-bars', {}, { timeout: 10_000 });
    expect(bars.querySelector('figcaption')?.textContent).toBe('Percent copied of each transfer in flight');
    expect(within(bars).getByRole('row', { name: /big\.bin from lsu/ }).textContent).toBe(
      'big.bin from lsu25 %',
    );
    expect(screen.getByTestId('failure').textContent).toContain('lsu did not answer');
    const cache = (await screen.findByTestId('cache-status')).textContent;
    expect(cache).toContain('at most 10 MiB: 3 MiB in 7 copies (1 MiB pinned)');
    expect(cache).toContain('42 hits, 5 misses, 4 MiB faulted in, 2 evictions');
    // Recharts is loaded the first time: give its import time on a busy machine.
  }, 20_000);

  it('works out progress without dividing by zero', () => {
    expect(percentDone(0, 0)).toBe(100);
    expect(percentDone(1, 3)).toBe(33);
    expect(percentDone(5, 4)).toBe(100);
  });
});
