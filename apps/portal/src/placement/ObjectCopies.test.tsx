// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { CopyDto } from '@tributary/shared';
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api } from '../api';
import { ObjectCopies } from './ObjectCopies';

function copy(overrides: Partial<CopyDto>): CopyDto {
  return {
    site: 'lsu',
    state: 'good',
    current: true,
    size: 5,
    checksum: 'sha256:x',
    verifiedAt: null,
    error: null,
    wanted: true,
    cached: false,
    pinned: false,
    updatedAt: '2026-11-27T10:00:00Z',
    ...overrides,
  };
}

function renderCopies() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={queryClient}>
      <ObjectCopies path="/p/a.bin" />
    </QueryClientProvider>,
  );
}

describe('ObjectCopies (an object’s copies)', () => {
  // The panel also reads the object's stat (tiers of copies on compound resources): none here.
  beforeEach(() => {
    vi.spyOn(api, 'stat').mockRejectedValue(new Error('no stat in this test'));
  });
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('shows each copy with its site and state in words, and where the rules want copies', async () => {
    vi.spyOn(api, 'objectCopies').mockResolvedValue({
      path: '/p/a.bin',
      size: 5,
      checksum: 'sha256:x',
      wantedSites: ['lsu', 'tulane'],
      rules: ['7'],
      copies: [
        copy({}),
        copy({ site: 'tulane', state: 'failed', current: false, error: 'lsu did not answer' }),
        copy({ site: 'uno', state: 'good', current: false, wanted: false }),
        copy({ site: 'zeta', wanted: false, cached: true, pinned: true }),
      ],
    });
    renderCopies();
    const rows = await screen.findAllByTestId('copy');
    expect(rows.map((r) => within(r).getByRole('rowheader').textContent)).toEqual([
      'lsu',
      'tulane',
      'uno',
      'zeta',
    ]);
    expect(rows[0]!.textContent).not.toContain('cached');
    expect(rows[3]!.textContent).toContain('good · cached, pinned');
    expect(rows[0]!.textContent).toContain('good');
    expect(rows[1]!.textContent).toContain('failed');
    expect(rows[1]!.textContent).toContain('lsu did not answer');
    expect(rows[2]!.textContent).toContain('good, but of older bytes');
    expect(screen.getByTestId('wanted-sites').textContent).toBe(
      'Placement rules want copies at lsu, tulane.',
    );
    expect(api.objectCopies).toHaveBeenCalledWith('/p/a.bin', expect.anything());
  });

  it('says when no rule covers the object', async () => {
    vi.spyOn(api, 'objectCopies').mockResolvedValue({
      path: '/p/a.bin',
      size: 5,
      checksum: 'sha256:x',
      wantedSites: [],
      rules: [],
      copies: [copy({ wanted: false })],
    });
    renderCopies();
    expect((await screen.findByTestId('wanted-sites')).textContent).toContain('No placement rule covers');
  });

  it('shows the tiers of a copy on a compound resource in a Storage column', async () => {
    vi.spyOn(api, 'objectCopies').mockResolvedValue({
      path: '/p/a.bin',
      size: 5,
      checksum: 'sha256:x',
      wantedSites: ['lsu'],
      rules: ['7'],
      copies: [copy({}), copy({ site: 'tulane', wanted: false })],
    });
    vi.spyOn(api, 'stat').mockResolvedValue({
      kind: 'object',
      id: '1',
      name: 'a.bin',
      path: '/p/a.bin',
      owner: 'alice',
      group: null,
      size: 5,
      checksum: 'sha256:x',
      contentType: 'application/octet-stream',
      version: 1,
      site: 'lsu',
      replicaCount: 2,
      createdAt: '2026-11-27T10:00:00Z',
      modifiedAt: '2026-11-27T10:00:00Z',
      mtime: '2026-11-27T10:00:00Z',
      mode: 0o644,
      linkTarget: null,
      access: 'own',
      replicas: [
        {
          site: 'lsu',
          resource: 'tiered',
          size: 5,
          checksum: 'sha256:x',
          status: 'good',
          tier: {
            cache: false,
            archive: 'archived',
            archiveError: null,
            staging: { bytesStaged: 2, bytesTotal: 5 },
          },
        },
        { site: 'tulane', resource: 'default', size: 5, checksum: 'sha256:x', status: 'good' },
      ],
    });
    renderCopies();
    const first = await screen.findByText('in the archive only, archived, staging 40%');
    expect(first.closest('[data-testid="copy"]')).not.toBeNull();
    expect(screen.getAllByRole('columnheader').map((h) => h.textContent)).toContain('Storage');
    const rows = screen.getAllByTestId('copy');
    expect(rows[1]!.textContent).not.toContain('archive');
  });
});
