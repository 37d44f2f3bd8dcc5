// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ShardDto } from '@tributary/shared';
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../api';
import { ObjectShards } from './ObjectShards';

function shard(index: number, site: string, overrides: Partial<ShardDto> = {}): ShardDto {
  return {
    index,
    site,
    state: 'good',
    current: true,
    size: 1024,
    checksum: 'x',
    verifiedAt: null,
    error: null,
    wanted: true,
    ...overrides,
  };
}

function renderShards() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  const { container } = render(
    <QueryClientProvider client={queryClient}>
      <ObjectShards path="/p/a.bin" />
    </QueryClientProvider>,
  );
  return container;
}

describe('ObjectShards (an erasure-coded object’s layout)', () => {
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('shows k, m and each shard’s site and state', async () => {
    vi.spyOn(api, 'objectShards').mockResolvedValue({
      path: '/p/a.bin',
      size: 4096,
      checksum: 'c',
      erasure: {
        k: 4,
        m: 2,
        chunk: 1024,
        domain: 'site',
        wantedSites: ['lsu', 'tulane', 'uno', 'a', 'b', 'c'],
        goodShards: 5,
        shards: [
          shard(1, 'tulane', { state: 'suspect', current: false, error: 'file missing' }),
          shard(0, 'lsu'),
          shard(2, 'uno'),
        ],
      },
    });
    renderShards();
    expect((await screen.findByTestId('erasure-layout')).textContent).toMatch(
      /4 data \+ 2 parity shards, each at another site: any 4 of them rebuild the object\. 5 of 6 are good\./,
    );
    const rows = screen.getAllByTestId('shard');
    expect(rows.map((r) => within(r).getAllByRole('cell')[0]?.textContent)).toEqual(['lsu', 'tulane', 'uno']);
    expect(rows[1]!.textContent).toContain('Suspect: missing or damaged, being rebuilt');
    expect(rows[1]!.textContent).toContain('file missing');
    expect(rows[0]!.textContent).toContain('1 (data)');
  });

  it('shows nothing for an object without shards', async () => {
    const spy = vi.spyOn(api, 'objectShards').mockResolvedValue({
      path: '/p/a.bin',
      size: 1,
      checksum: 'c',
      erasure: null,
    });
    const container = renderShards();
    await vi.waitFor(() => expect(spy).toHaveBeenCalled());
    await new Promise((r) => setTimeout(r, 20));
    expect(container.textContent).toBe('');
  });
});
