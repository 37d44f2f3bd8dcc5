// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api } from '../api';
import { QueryForm } from './QueryForm';

function renderForm(q = '') {
  const onRun = vi.fn();
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <QueryClientProvider client={queryClient}>
      <QueryForm q={q} scope="/" kind="object" onRun={onRun} />
    </QueryClientProvider>,
  );
  const box = screen.getByRole('combobox', { name: 'Query' });
  return { onRun, box, user: userEvent.setup() };
}

describe('QueryForm (the query box)', () => {
  beforeEach(() => {
    localStorage.clear();
    vi.spyOn(api, 'metadataAttributes').mockResolvedValue({
      attributes: ['filetype', 'project', 'instrument'],
    });
  });
  afterEach(() => {
    cleanup();
    vi.restoreAllMocks();
  });

  it('suggests attributes from the API while typing, and Tab accepts the highlighted one', async () => {
    const { box, user } = renderForm();
    await waitFor(() => expect(api.metadataAttributes).toHaveBeenCalled());
    await user.type(box, 'fi');
    const list = await screen.findByRole('listbox', { name: 'Suggestions' });
    expect(box.getAttribute('aria-expanded')).toBe('true');
    const options = within(list)
      .getAllByRole('option')
      .map((o) => o.textContent);
    expect(options).toContain('filetype');
    expect(options).not.toContain('project');
    expect(list.querySelector('[aria-selected="true"]')?.textContent).toBe('filetype');
    await user.keyboard('{Tab}');
    expect((box as HTMLInputElement).value).toBe('filetype ');
    // After an attribute come the operators.
    const next = await screen.findByRole('listbox', { name: 'Suggestions' });
    const operators = within(next)
      .getAllByRole('option')
      .map((o) => o.textContent);
    expect(operators).toEqual(expect.arrayContaining(['=', '!=', '<', '>=', 'between', 'in']));
    expect(operators).not.toContain('filetype');
  });

  it('arrows move the highlight, Enter accepts, Escape closes the list', async () => {
    const { box, user } = renderForm();
    await waitFor(() => expect(api.metadataAttributes).toHaveBeenCalled());
    // ArrowDown opens the list on an empty box: every attribute.
    await user.click(box);
    await user.keyboard('{ArrowDown}');
    const list = await screen.findByRole('listbox');
    const all = () => within(list).getAllByRole('option');
    expect(all().length).toBeGreaterThanOrEqual(3);
    const first = all()[0]!;
    expect(first.getAttribute('aria-selected')).toBe('true');
    await user.keyboard('{ArrowDown}');
    const highlighted = all().find((o) => o.getAttribute('aria-selected') === 'true');
    expect(highlighted).not.toBe(first);
    expect(box.getAttribute('aria-activedescendant')).toBe(highlighted?.id);
    const chosen = highlighted?.textContent ?? '';
    await user.keyboard('{Enter}');
    expect((box as HTMLInputElement).value).toBe(`${chosen} `);
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('listbox')).toBeNull();
    expect(box.getAttribute('aria-expanded')).toBe('false');
  });

  it('a click on a suggestion accepts it', async () => {
    const { box, user } = renderForm();
    await waitFor(() => expect(api.metadataAttributes).toHaveBeenCalled());
    await user.type(box, 'proj');
    await user.click(await screen.findByRole('option', { name: 'project' }));
    expect((box as HTMLInputElement).value).toBe('project ');
  });

  it('shows why a query does not parse, with a caret under the bad part, and does not run it', async () => {
    const { box, onRun, user } = renderForm();
    await user.type(box, 'size > 3 and (filetype = ');
    await user.keyboard('{Escape}');
    await user.click(screen.getByRole('button', { name: 'Search' }));
    const alert = await screen.findByRole('alert');
    expect(onRun).not.toHaveBeenCalled();
    expect(box.getAttribute('aria-invalid')).toBe('true');
    const position = Number(/at character (\d+)/.exec(alert.textContent ?? '')?.[1]) - 1;
    expect(position).toBeGreaterThanOrEqual('size > 3 and ('.length);
    // The caret line points at that position of the text.
    const pre = alert.querySelector('pre')?.textContent ?? '';
    const [textLine, caretLine] = pre.split('\n');
    expect(textLine).toBe('size > 3 and (filetype = ');
    expect(caretLine).toBe(`${' '.repeat(position)}^`);
    // The box describes itself by the error, so a screen reader reads it with the field.
    expect(box.getAttribute('aria-describedby')).toContain(alert.parentElement?.id ?? 'missing');

    // Fixing the text clears the complaint; a valid query runs with scope and kind.
    await user.type(box, 'fits)');
    expect(screen.queryByRole('alert')).toBeNull();
    await user.keyboard('{Escape}');
    await user.click(screen.getByRole('button', { name: 'Search' }));
    expect(onRun).toHaveBeenCalledWith({ q: 'size > 3 and (filetype = fits)', scope: '/', kind: 'object' });
  });

  it('an unknown operator is pointed at where it starts', async () => {
    const { box, user } = renderForm();
    await user.type(box, 'size >> 3');
    await user.keyboard('{Escape}');
    await user.tab();
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toMatch(/at character [67]\b/);
  });
});
