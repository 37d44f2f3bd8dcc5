// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ConflictDto, ConflictFactsDto } from '@tributary/shared';
import { cleanup, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter, Route, Routes } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, api } from '../api';
import { ConflictDetailPage } from './ConflictDetailPage';

function facts(over: Partial<ConflictFactsDto>): ConflictFactsDto {
  return {
    name: null,
    location: '/home/admin/shared',
    size: 1000,
    checksum: 'sha256:ab',
    contentType: null,
    attribute: null,
    value: null,
    unit: null,
    other: {},
    state: 'live',
    ...over,
  };
}

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
        values: { id: '7', name: 'report-lsu.txt', size: 1000, trash_id: 0, content_type: 'text/plain' },
        facts: facts({ name: 'report-lsu.txt', contentType: 'text/plain' }),
        provisionalWinner: false,
      },
      {
        index: 1,
        site: 'tulane',
        at: '2026-11-21T09:59:30Z',
        deleted: false,
        trashed: false,
        by: 'bob',
        values: { id: '7', name: 'report-tulane.txt', size: 1000, trash_id: 0, content_type: 'text/csv' },
        facts: facts({ name: 'report-tulane.txt', contentType: 'text/csv' }),
        provisionalWinner: true,
      },
    ],
    changedFields: ['content_type', 'name'],
    detail: {},
    entry: {
      type: 'file',
      name: 'report-tulane.txt',
      path: '/home/admin/shared/report-tulane.txt',
      on: null,
      gone: false,
      label: 'file report-tulane.txt',
    },
    story:
      'renamed to report-lsu.txt, typed text/plain at lsu while renamed to report-tulane.txt, typed text/csv at tulane',
    differing: ['name', 'contentType'],
    contenders: [],
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

  it('says what happened and shows both versions side by side, the differing facts first, the provisional winner marked', async () => {
    const spy = vi.spyOn(api, 'conflict').mockResolvedValue(conflict());
    renderPage();
    const table = await screen.findByRole('table', { name: 'Versions side by side' });
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe(
      'Changed at two sites file report-tulane.txt',
    );
    expect(screen.getByTestId('conflict-story').textContent).toMatch(/^Renamed to report-lsu\.txt, typed/);
    expect(spy).toHaveBeenCalledWith('42', expect.anything());
    const headers = within(table).getAllByRole('columnheader');
    expect(headers.map((h) => h.textContent)).toEqual([
      'What',
      expect.stringMatching(/^Version from lsu/),
      expect.stringMatching(/^Version from tulane provisional winner/),
      expect.stringMatching(/^Merge: keep \(pick a version per field/),
    ]);
    expect(headers[2]?.className).toBe('winner');
    expect(headers[1]?.className).not.toBe('winner');
    // Only the differing facts at first, with both values in their columns.
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(2);
    const cells = within(rows[0]!).getAllByRole('cell');
    expect(within(rows[0]!).getByRole('rowheader').textContent).toBe('Name (differs) ≠');
    expect(cells.slice(0, 2).map((c) => c.textContent)).toEqual(['report-lsu.txt', 'report-tulane.txt']);
    expect(screen.getByText('the version from tulane')).toBeTruthy();

    // The facts that agree on demand; internal columns never.
    await userEvent.setup().click(screen.getByRole('button', { name: 'Show the 4 details that agree' }));
    expect(
      within(table)
        .getAllByRole('row')
        .slice(1)
        .map((r) => within(r).getByRole('rowheader').textContent),
    ).toEqual(['Name (differs) ≠', 'Type (differs) ≠', 'Folder', 'Size', 'Checksum', 'State']);
    expect(table.textContent).not.toMatch(/trash_id|updated_at|content_type/);
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
    // Only fields people may merge get a picker: the type, not the name.
    expect(screen.queryByRole('combobox', { name: 'Name: the version to keep' })).toBeNull();
    await user.selectOptions(screen.getByRole('combobox', { name: 'Type: the version to keep' }), 'from lsu');
    await user.click(screen.getByRole('button', { name: 'Merge the picked values' }));
    expect(decide).toHaveBeenLastCalledWith('42', { action: 'merge', value: { content_type: 'text/plain' } });
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

  it('a same-name conflict lists every contender with its size, checksum, creator and a download', async () => {
    const contender = (site: string, name: string, kept: boolean) => ({
      recordId: site,
      site,
      createdAt: '2026-11-21T09:59:00Z',
      createdBy: 'alice',
      name,
      path: `/p/${name}`,
      size: 2048,
      checksum: `sha256:${site}0123456789abcdef`,
      kept,
      trashed: false,
      gone: false,
    });
    vi.spyOn(api, 'conflict').mockResolvedValue(
      conflict({
        kind: 'same-name',
        story: 'three files named run.tar.gz were created at once',
        contenders: [
          contender('lsu', 'run.tar.gz', true),
          contender('tulane', 'run_1.tar.gz', false),
          contender('uno', 'run_2.tar.gz', false),
        ],
      }),
    );
    renderPage();
    const table = await screen.findByRole('table', { name: 'Everything created under this name' });
    const rows = within(table).getAllByTestId('contender');
    expect(rows).toHaveLength(3);
    expect(rows[0]!.textContent).toContain('kept the name');
    expect(rows[2]!.textContent).toContain('2 KiB');
    expect(within(rows[1]!).getByRole('link', { name: 'Download run_1.tar.gz' }).getAttribute('href')).toBe(
      '/api/v1/data?path=%2Fp%2Frun_1.tar.gz',
    );
    // A same-name conflict is decided by a name, not by choosing a version.
    expect(screen.queryByRole('button', { name: /Choose the version/ })).toBeNull();
    expect(screen.getByRole('button', { name: 'Accept the new name' })).toBeTruthy();
  });
});
