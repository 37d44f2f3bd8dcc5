// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { EntryDetailDto, PlacementRuleDto } from '@tributary/shared';
import { cleanup, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, api } from '../api';
import { CopiesPanel } from './CopiesPanel';

const PATH = '/projects/coast/raw';

function rule(overrides: Partial<PlacementRuleDto>): PlacementRuleDto {
  return {
    id: '1',
    path: PATH,
    copies: 2,
    sites: null,
    condition: null,
    expiresAt: null,
    owner: 'alice',
    createdAt: '2026-11-27T10:00:00Z',
    subscription: false,
    inheritedFrom: null,
    ...overrides,
  };
}

const OWN = rule({ id: '11', copies: 2, sites: ['lsu', 'tulane'], condition: 'filetype = fits' });
const INHERITED = rule({ id: '7', copies: 1, path: '/projects', inheritedFrom: '/projects' });

function mockApi(access: 'own' | 'read') {
  vi.spyOn(api, 'placementRules').mockResolvedValue({ items: [OWN, INHERITED], total: 2 });
  vi.spyOn(api, 'stat').mockResolvedValue({ path: PATH, access } as EntryDetailDto);
  vi.spyOn(api, 'placementSites').mockResolvedValue([
    { id: 'lsu', name: 'LSU', local: true },
    { id: 'tulane', name: 'tulane', local: false },
  ]);
}

function renderPanel() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={queryClient}>
      <MemoryRouter>
        <CopiesPanel path={PATH} />
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return userEvent.setup();
}

describe('CopiesPanel (a collection’s placement rules)', () => {
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('lists its own rules and the inherited ones, which link to where they are set', async () => {
    mockApi('own');
    renderPanel();
    const rows = await screen.findAllByTestId('placement-rule');
    expect(rows.map((r) => within(r).getByRole('rowheader').textContent)).toEqual([
      '2 copies among lsu, tulane',
      '1 copy at any site',
    ]);
    expect(rows[0]!.textContent).toContain('filetype = fits');
    expect(rows[0]!.textContent).toContain('this collection');
    expect(within(rows[1]!).getByRole('link', { name: '/projects' }).getAttribute('href')).toBe(
      '/browse/projects',
    );
    // Only a rule set here can be removed here.
    expect(within(rows[0]!).getByRole('button', { name: /Remove/ })).toBeTruthy();
    expect(within(rows[1]!).queryByRole('button')).toBeNull();
    expect(api.placementRules).toHaveBeenCalledWith(
      { path: PATH, limit: 200, cursor: undefined },
      expect.anything(),
    );
  });

  it('adds a rule with the sites picked, and shows the refusal in words', async () => {
    mockApi('own');
    const add = vi
      .spyOn(api, 'addPlacementRule')
      .mockRejectedValueOnce(
        new ApiError(422, 'VALIDATION_FAILED', 'invalid rule: condition: expected a value at position 5', {
          condition: ['expected a value at position 5'],
        }),
      )
      .mockResolvedValueOnce(rule({ id: '12' }));
    const user = renderPanel();
    await user.click(await screen.findByRole('checkbox', { name: /LSU \(lsu\)/ }));
    await user.click(screen.getByRole('checkbox', { name: /tulane/ }));
    const condition = screen.getByLabelText('Only objects where (optional)');
    await user.type(condition, 'kind');
    await user.click(screen.getByRole('button', { name: 'Add rule' }));
    await waitFor(() =>
      expect(add).toHaveBeenCalledWith({
        path: PATH,
        copies: 2,
        sites: ['lsu', 'tulane'],
        condition: 'kind',
      }),
    );
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('condition: expected a value at position 5');

    await user.type(condition, ' = raw');
    await user.click(screen.getByRole('button', { name: 'Add rule' }));
    await waitFor(() => expect(add).toHaveBeenCalledTimes(2));
    expect(add).toHaveBeenLastCalledWith({
      path: PATH,
      copies: 2,
      sites: ['lsu', 'tulane'],
      condition: 'kind = raw',
    });
    // Added: the alert goes, the form is empty again, and the rules are fetched again.
    await waitFor(() => expect(screen.queryByRole('alert')).toBeNull());
    expect((condition as HTMLInputElement).value).toBe('');
    await waitFor(() => expect(vi.mocked(api.placementRules).mock.calls.length).toBeGreaterThan(1));
  });

  it('does not let more copies be asked for than sites are ticked', async () => {
    mockApi('own');
    const add = vi.spyOn(api, 'addPlacementRule');
    const user = renderPanel();
    await user.click(await screen.findByRole('checkbox', { name: /tulane/ }));
    expect(screen.getByLabelText('Number of copies').getAttribute('max')).toBe('1');
    await user.click(screen.getByRole('button', { name: 'Add rule' }));
    expect(add).not.toHaveBeenCalled();
  });

  it('removes a rule only once the person confirms', async () => {
    mockApi('own');
    const remove = vi.spyOn(api, 'removePlacementRule').mockResolvedValue(undefined);
    const user = renderPanel();
    const button = within((await screen.findAllByTestId('placement-rule'))[0]!).getByRole('button');
    await user.click(button);
    await user.click(
      within(screen.getByRole('alertdialog', { name: /2 copies among lsu, tulane/ })).getByRole('button', {
        name: 'Cancel',
      }),
    );
    expect(remove).not.toHaveBeenCalled();
    await user.click(button);
    const ask = screen.getByRole('alertdialog', { name: /2 copies among lsu, tulane/ });
    expect(ask.textContent).toContain('Copies it alone wants are removed.');
    await user.click(within(ask).getByRole('button', { name: 'Remove' }));
    await waitFor(() => expect(remove).toHaveBeenCalledWith('11'));
  });

  it('shows a subscription as such, and unsubscribes once confirmed', async () => {
    mockApi('own');
    const sub = rule({ id: '21', copies: 1, sites: ['tulane'], subscription: true });
    vi.mocked(api.placementRules).mockResolvedValue({ items: [sub, OWN], total: 2 });
    const unsubscribe = vi.spyOn(api, 'unsubscribe').mockResolvedValue(undefined);
    const user = renderPanel();
    const rows = await screen.findAllByTestId('placement-rule');
    expect(within(rows[0]!).getByRole('rowheader').textContent).toBe('a copy at tulane (subscribed)');

    await user.click(within(rows[0]!).getByRole('button', { name: /Unsubscribe/ }));
    const ask = screen.getByRole('alertdialog', { name: /End the subscription of tulane/ });
    await user.click(within(ask).getByRole('button', { name: 'Unsubscribe' }));
    await waitFor(() => expect(unsubscribe).toHaveBeenCalledWith('21'));
  });

  it('offers neither adding nor removing to those who do not own the collection', async () => {
    mockApi('read');
    renderPanel();
    await screen.findAllByTestId('placement-rule');
    await waitFor(() => expect(api.stat).toHaveBeenCalled());
    expect(screen.queryByRole('button', { name: /Remove/ })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Add rule' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Subscribe' })).toBeNull();
  });

  it('subscribes this site by default, another site when picked, and says what follows', async () => {
    mockApi('own');
    const subscribe = vi
      .spyOn(api, 'subscribe')
      .mockRejectedValueOnce(
        new ApiError(422, 'VALIDATION_FAILED', 'invalid condition: expected a value at position 10', {
          condition: ['expected a value at position 10'],
        }),
      )
      .mockResolvedValueOnce({
        id: '31',
        path: PATH,
        site: 'tulane',
        condition: 'instrument = lidar',
        owner: 'alice',
        createdAt: '2026-11-27T10:00:00Z',
      });
    const user = renderPanel();
    const subscriber = await screen.findByLabelText('Subscriber');
    // This site first (the default), then the others.
    await waitFor(() =>
      expect([...subscriber.querySelectorAll('option')].map((o) => o.textContent)).toEqual([
        'This site, LSU (lsu)',
        'tulane',
      ]),
    );
    const condition = screen.getByLabelText('Follow only objects where (optional)');
    await user.type(condition, 'instrument');
    await user.click(screen.getByRole('button', { name: 'Subscribe' }));
    await waitFor(() => expect(subscribe).toHaveBeenCalledWith({ path: PATH, condition: 'instrument' }));
    expect((await screen.findByRole('alert')).textContent).toContain('expected a value at position 10');

    await user.selectOptions(subscriber, 'tulane');
    await user.type(condition, ' = lidar');
    await user.click(screen.getByRole('button', { name: 'Subscribe' }));
    await waitFor(() =>
      expect(subscribe).toHaveBeenLastCalledWith({
        path: PATH,
        site: 'tulane',
        condition: 'instrument = lidar',
      }),
    );
    expect((await screen.findByRole('status')).textContent).toContain('tulane follows /projects/coast/raw');
    // The rules are fetched again: the subscription shows among them.
    await waitFor(() => expect(vi.mocked(api.placementRules).mock.calls.length).toBeGreaterThan(1));
  });
});
