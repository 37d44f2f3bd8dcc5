// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { Page, SavedSearchDto, SessionDto } from '@tributary/shared';
import { cleanup, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, api } from '../api';
import { SessionProvider } from '../app/session';
import { SavedSearches } from './SavedSearches';

const session: SessionDto = {
  user: {
    id: '5',
    username: 'alice',
    displayName: 'Alice',
    email: null,
    isAdmin: false,
    disabled: false,
    activeGroup: null,
    groups: [],
    homePath: '/home/alice',
    createdAt: '2026-11-21T10:00:00.000Z',
    updatedAt: '2026-11-21T10:00:00.000Z',
  },
  csrfToken: 'csrf',
  expiresAt: '2099-01-01T00:00:00.000Z',
};

function saved(
  id: string,
  name: string,
  query: string,
  kind: 'object' | 'collection' = 'object',
): SavedSearchDto {
  return {
    id,
    name,
    query,
    scope: '/projects',
    kind,
    createdAt: '2026-11-21T10:00:00.000Z',
    updatedAt: '2026-11-21T10:00:00.000Z',
  };
}

/** A stand-in for the API's store: what the list answers changes with what was saved. */
let store: SavedSearchDto[] = [];
const page = (): Page<SavedSearchDto> => ({ items: [...store], total: store.length });

function renderSaved(canSave = true) {
  const onRun = vi.fn();
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={queryClient}>
      <SessionProvider session={session} onEnded={() => undefined}>
        <SavedSearches q="filetype = fits" scope="/projects" kind="object" canSave={canSave} onRun={onRun} />
      </SessionProvider>
    </QueryClientProvider>,
  );
  return { onRun, user: userEvent.setup() };
}

describe('SavedSearches', () => {
  beforeEach(() => {
    localStorage.clear();
    store = [
      saved('1', 'big fits', 'filetype = fits and size > 1e6'),
      saved('2', 'folders', '', 'collection'),
    ];
    vi.spyOn(api, 'listSavedSearches').mockImplementation(() => Promise.resolve(page()));
  });
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('lists the searches the API keeps; a click runs one with its scope and kind', async () => {
    const { onRun, user } = renderSaved(false);
    await user.click(await screen.findByRole('button', { name: 'folders' }));
    expect(onRun).toHaveBeenCalledWith({ q: '', scope: '/projects', kind: 'collection' });
    expect(screen.getByRole('button', { name: 'big fits' })).toBeTruthy();
    expect(screen.queryByLabelText('Save this search as')).toBeNull();
  });

  it('saves the current search; a name already used replaces that search', async () => {
    const create = vi.spyOn(api, 'createSavedSearch').mockImplementation((body) => {
      const s = saved('3', body.name, body.query);
      store.push(s);
      return Promise.resolve(s);
    });
    const update = vi
      .spyOn(api, 'updateSavedSearch')
      .mockImplementation((id) => Promise.resolve(store.find((s) => s.id === id)!));
    const { user } = renderSaved();
    await screen.findByRole('button', { name: 'big fits' });
    const box = screen.getByLabelText('Save this search as');
    await user.type(box, 'fits only{Enter}');
    expect(create).toHaveBeenCalledWith({
      name: 'fits only',
      query: 'filetype = fits',
      scope: '/projects',
      kind: 'object',
    });
    expect(await screen.findByRole('button', { name: 'fits only' })).toBeTruthy();
    await waitFor(() => expect((box as HTMLInputElement).value).toBe(''));

    await user.type(box, 'big fits{Enter}');
    expect(update).toHaveBeenCalledWith('1', {
      name: 'big fits',
      query: 'filetype = fits',
      scope: '/projects',
      kind: 'object',
    });
    expect(create).toHaveBeenCalledTimes(1);
  });

  it('a refused save is shown next to the form, with the field', async () => {
    vi.spyOn(api, 'createSavedSearch').mockRejectedValue(
      new ApiError(422, 'INVALID_QUERY', 'invalid query: expected a value', {
        query: ['expected a value at position 16'],
      }),
    );
    const { user } = renderSaved();
    await screen.findByRole('button', { name: 'big fits' });
    await user.type(screen.getByLabelText('Save this search as'), 'broken{Enter}');
    const form = screen.getByLabelText('Save this search as').closest('form')!;
    const alert = await within(form).findByRole('alert');
    expect(alert.textContent).toContain('invalid query: expected a value');
    expect(alert.textContent).toContain('query: expected a value at position 16');
  });

  it('renames in place (Escape cancels) and forgets a search', async () => {
    const rename = vi.spyOn(api, 'updateSavedSearch').mockImplementation((id, body) => {
      const s = store.find((x) => x.id === id)!;
      Object.assign(s, { name: body.name });
      return Promise.resolve(s);
    });
    const remove = vi.spyOn(api, 'deleteSavedSearch').mockImplementation((id) => {
      store = store.filter((s) => s.id !== id);
      return Promise.resolve();
    });
    const { user } = renderSaved();
    await user.click(await screen.findByRole('button', { name: 'Rename saved search big fits' }));
    const input = screen.getByLabelText('New name for big fits');
    expect(document.activeElement).toBe(input);
    await user.keyboard('{Escape}');
    expect(screen.queryByLabelText('New name for big fits')).toBeNull();

    await user.click(screen.getByRole('button', { name: 'Rename saved search big fits' }));
    await user.clear(screen.getByLabelText('New name for big fits'));
    await user.type(screen.getByLabelText('New name for big fits'), 'large fits{Enter}');
    expect(rename).toHaveBeenCalledWith('1', { name: 'large fits' });
    expect(await screen.findByRole('button', { name: 'large fits' })).toBeTruthy();

    await user.click(screen.getByRole('button', { name: 'Forget saved search folders' }));
    expect(remove).toHaveBeenCalledWith('2');
    await waitFor(() => expect(screen.queryByRole('button', { name: 'folders' })).toBeNull());
  });

  it('moves searches an earlier portal kept in this browser to the API once', async () => {
    localStorage.setItem(
      'tributary.saved-searches.alice',
      JSON.stringify([{ name: 'old one', q: 'project = coast', scope: '/', kind: 'object' }]),
    );
    const create = vi.spyOn(api, 'createSavedSearch').mockImplementation((body) => {
      const s = saved('9', body.name, body.query);
      store.push(s);
      return Promise.resolve(s);
    });
    renderSaved(false);
    expect(await screen.findByRole('button', { name: 'old one' })).toBeTruthy();
    expect(create).toHaveBeenCalledTimes(1);
    expect(localStorage.getItem('tributary.saved-searches.alice')).toBeNull();
  });
});
