// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ConflictDto } from '@tributary/shared';
import { cleanup, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter, Route, Routes } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, api } from '../api';
import { ConflictDetailPage } from './ConflictDetailPage';

function conflict(overrides: Partial<ConflictDto> = {}): ConflictDto {
  return {
    id: '42',
    kind: 'update',
    table: 'data_objects',
    recordId: '7',
    path: '/home/admin/shared/report-tulane.txt',
    status: 'open',
    openedAt: '2026-11-21T10:00:00Z',
    deadline: '2099-11-22T10:00:00Z',
    versions: [
      {
        index: 0,
        site: 'lsu',
        at: '2026-11-21T09:59:00Z',
        deleted: false,
        trashed: false,
        by: 'alice',
        values: { id: '7', name: 'report-lsu.txt', size: 1000, owner: 'admin' },
        provisionalWinner: false,
      },
      {
        index: 1,
        site: 'tulane',
        at: '2026-11-21T09:59:30Z',
        deleted: false,
        trashed: false,
        by: 'bob',
        values: { id: '7', name: 'report-tulane.txt', size: 1000, owner: 'admin' },
        provisionalWinner: true,
      },
    ],
    changedFields: ['name'],
    detail: {},
    decision: null,
    involvesMe: true,
    canDecide: true,
    ...overrides,
  };
}

function renderPage() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter initialEntries={['/conflicts/42']}>
        <Routes>
          <Route path="/conflicts/:id" element={<ConflictDetailPage />} />
        </Routes>
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return userEvent.setup();
}

describe('ConflictDetailPage (the conflict diff)', () => {
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('shows both versions side by side, the differing field first, the provisional winner marked', async () => {
    const spy = vi.spyOn(api, 'conflict').mockResolvedValue(conflict());
    renderPage();
    const table = await screen.findByRole('table', { name: 'Versions side by side' });
    expect(spy).toHaveBeenCalledWith('42', expect.anything());
    const headers = within(table).getAllByRole('columnheader');
    expect(headers.map((h) => h.textContent)).toEqual([
      'Field',
      expect.stringMatching(/^Version from lsu/),
      expect.stringMatching(/^Version from tulane provisional winner/),
      'Merge: keep',
    ]);
    expect(headers[2]?.className).toBe('winner');
    expect(headers[1]?.className).not.toBe('winner');
    // Only the differing field at first, with both values in their columns.
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(1);
    const cells = within(rows[0]!).getAllByRole('cell');
    expect(within(rows[0]!).getByRole('rowheader').textContent).toBe('name (differs)');
    expect(cells.slice(0, 2).map((c) => c.textContent)).toEqual(['report-lsu.txt', 'report-tulane.txt']);
    expect(screen.getByText('version from tulane')).toBeTruthy();

    // The fields that agree on demand.
    await userEvent.setup().click(screen.getByRole('button', { name: 'Show the 2 fields that agree' }));
    expect(
      within(table)
        .getAllByRole('row')
        .slice(1)
        .map((r) => within(r).getByRole('rowheader').textContent),
    ).toEqual(['name (differs)', 'owner', 'size']);
  });

  it('the decide buttons call the client: keep the winner, or choose the other version', async () => {
    const read = vi.spyOn(api, 'conflict').mockResolvedValue(conflict());
    const decidedConflict = conflict({
      status: 'decided',
      canDecide: false,
      decision: {
        action: 'choose',
        by: 'admin',
        policy: null,
        at: '2026-11-21T10:05:00Z',
        site: 'lsu',
        value: null,
      },
    });
    // Like the server: once decided, reading the conflict shows the decision.
    const decide = vi.spyOn(api, 'decideConflict').mockImplementation(() => {
      read.mockResolvedValue(decidedConflict);
      return Promise.resolve(decidedConflict);
    });
    const user = renderPage();
    const choose = await screen.findByRole('button', { name: 'Choose the version from lsu' });
    expect(screen.getByRole('button', { name: 'Keep the provisional winner (tulane)' })).toBeTruthy();
    // No button to choose the winner twice.
    expect(screen.queryByRole('button', { name: 'Choose the version from tulane' })).toBeNull();
    await user.click(choose);
    expect(decide).toHaveBeenCalledWith('42', { action: 'choose', version: 0 });
    const decided = await screen.findByTestId('conflict-decision');
    expect(decided.textContent).toMatch(/Decided: choose by admin at lsu/);
    expect(screen.getByTestId('conflict-status').textContent).toBe('decided');
    expect(screen.queryByRole('button', { name: /Choose the version/ })).toBeNull();
  });

  it('keep and merge send their own decisions', async () => {
    vi.spyOn(api, 'conflict').mockResolvedValue(conflict());
    const decide = vi.spyOn(api, 'decideConflict').mockResolvedValue(conflict());
    const user = renderPage();
    await user.click(await screen.findByRole('button', { name: 'Keep the provisional winner (tulane)' }));
    expect(decide).toHaveBeenLastCalledWith('42', { action: 'keep' });
    await user.selectOptions(screen.getByRole('combobox', { name: 'Value of name to keep' }), 'lsu');
    await user.click(screen.getByRole('button', { name: 'Merge the picked values' }));
    expect(decide).toHaveBeenLastCalledWith('42', {
      action: 'merge',
      value: expect.objectContaining({ name: 'report-lsu.txt' }) as unknown,
    });
  });

  it('a refused decision is shown next to the buttons', async () => {
    vi.spyOn(api, 'conflict').mockResolvedValue(conflict());
    vi.spyOn(api, 'decideConflict').mockRejectedValue(
      new ApiError(409, 'CONFLICT_CLOSED', 'this conflict was decided at tulane meanwhile'),
    );
    const user = renderPage();
    await user.click(await screen.findByRole('button', { name: 'Choose the version from lsu' }));
    const decide = screen.getByRole('heading', { name: 'Decide' }).closest('section')!;
    expect((await within(decide).findByRole('alert')).textContent).toContain('decided at tulane meanwhile');
  });

  it('someone who may not decide sees the versions but no buttons', async () => {
    vi.spyOn(api, 'conflict').mockResolvedValue(conflict({ canDecide: false }));
    renderPage();
    expect(await screen.findByText('You may not decide this conflict.')).toBeTruthy();
    expect(screen.queryByRole('button', { name: /Choose|Keep/ })).toBeNull();
  });
});
