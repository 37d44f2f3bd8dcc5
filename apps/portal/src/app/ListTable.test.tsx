// @vitest-environment happy-dom
import { cleanup, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it } from 'vitest';
import { ListTable, RESIZE_STEP, type ListColumn } from './ListTable';

interface Fruit {
  id: string;
  name: string;
  grams: number;
}

const fruits: Fruit[] = [
  { id: 'a', name: 'apple', grams: 180 },
  { id: 'b', name: 'banana', grams: 120 },
];

const columns: ListColumn<Fruit>[] = [
  { id: 'name', header: 'Name', cell: (f) => f.name },
  { id: 'grams', header: 'Weight', className: 'num', headerClassName: 'wide', cell: (f) => `${f.grams} g` },
  { id: 'actions', header: 'Actions', headerHidden: true, cell: (f) => <button>Eat {f.name}</button> },
];

afterEach(cleanup);

describe('ListTable', () => {
  it('draws a header row of column headers and a row per record, cells in column order', () => {
    render(<ListTable className="list" columns={columns} rows={fruits} rowKey={(f) => f.id} />);
    const table = screen.getByRole('table');
    expect(table.className).toBe('list-table list');
    const headers = within(table).getAllByRole('columnheader');
    expect(headers.map((h) => h.textContent)).toEqual(['Name', 'Weight', 'Actions']);
    for (const h of headers) expect(h.getAttribute('scope')).toBe('col');
    expect(headers[1]!.className).toBe('wide');
    expect(headers[0]!.hasAttribute('class')).toBe(false);
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows.map((r) => [...r.children].map((c) => c.textContent))).toEqual([
      ['apple', '180 g', 'Eat apple'],
      ['banana', '120 g', 'Eat banana'],
    ]);
    expect(rows[0]!.children[1]!.className).toBe('num');
    expect(rows[0]!.children[0]!.hasAttribute('class')).toBe(false);
  });

  it('hides a header visually but keeps it for screen readers', () => {
    render(<ListTable columns={columns} rows={fruits} rowKey={(f) => f.id} />);
    const actions = screen.getByRole('columnheader', { name: 'Actions' });
    expect(actions.firstElementChild?.className).toBe('visually-hidden');
    // A plain header is its text and the column's resize handle.
    expect(screen.getByRole('columnheader', { name: /^Name/ }).firstElementChild?.getAttribute('role')).toBe(
      'separator',
    );
  });

  it('puts the page’s test id and ARIA attributes on each row', () => {
    render(
      <ListTable
        columns={columns}
        rows={fruits}
        rowKey={(f) => f.id}
        rowProps={(f) => ({ 'data-testid': 'fruit-row', 'aria-selected': f.id === 'b' })}
      />,
    );
    const rows = screen.getAllByTestId('fruit-row');
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.getAttribute('aria-selected'))).toEqual(['false', 'true']);
  });

  it('makes a row-header column a th scope="row" that names its row', () => {
    const named: ListColumn<Fruit>[] = [{ ...columns[0]!, rowHeader: true }, columns[1]!];
    render(<ListTable columns={named} rows={fruits} rowKey={(f) => f.id} />);
    const cell = screen.getByRole('rowheader', { name: 'banana' });
    expect(cell.tagName).toBe('TH');
    expect(cell.getAttribute('scope')).toBe('row');
    expect(screen.getByRole('row', { name: /banana/ })).toBeTruthy();
  });

  it('shows a spanning row across every column in place of the row’s cells', () => {
    render(
      <ListTable
        columns={columns}
        rows={fruits}
        rowKey={(f) => f.id}
        spanningRow={(f) => f.id === 'a' && <form aria-label="Edit apple" />}
      />,
    );
    const rows = screen.getAllByRole('row').slice(1);
    const only = rows[0]!.children;
    expect(only).toHaveLength(1);
    expect(only[0]!.getAttribute('colspan')).toBe('3');
    expect(within(rows[0]!).getByRole('form', { name: 'Edit apple' })).toBeTruthy();
    expect(rows[1]!.children).toHaveLength(3);
  });

  it('names the table by its caption, which may be visually hidden', () => {
    render(
      <ListTable columns={columns} rows={fruits} rowKey={(f) => f.id} caption="Fruit bowl" captionHidden />,
    );
    const table = screen.getByRole('table', { name: 'Fruit bowl' });
    expect(table.querySelector('caption')?.className).toBe('visually-hidden');
  });

  it('when empty: a message in place of the table, nothing, or the header alone', () => {
    const { container, rerender } = render(
      <ListTable columns={columns} rows={[]} rowKey={(f) => f.id} empty="No fruit yet." />,
    );
    expect(screen.queryByRole('table')).toBeNull();
    const note = screen.getByText('No fruit yet.');
    expect(note.tagName).toBe('P');
    expect(note.className).toBe('muted');

    rerender(<ListTable columns={columns} rows={[]} rowKey={(f) => f.id} empty={null} />);
    expect(container.innerHTML).toBe('');

    rerender(<ListTable columns={columns} rows={[]} rowKey={(f) => f.id} />);
    expect(screen.getAllByRole('columnheader')).toHaveLength(3);
    expect(screen.getAllByRole('row')).toHaveLength(1);

    rerender(<ListTable columns={columns} rows={fruits} rowKey={(f) => f.id} empty="No fruit yet." />);
    expect(screen.queryByText('No fruit yet.')).toBeNull();
    expect(screen.getAllByRole('row')).toHaveLength(3);
  });

  it('sorts by a column from its header button, by click or keyboard: ascending, descending, as given', async () => {
    const user = userEvent.setup();
    const sortable: ListColumn<Fruit>[] = [
      { ...columns[0]!, sortValue: (f) => f.name },
      { ...columns[1]!, sortValue: (f) => f.grams },
      columns[2]!,
    ];
    const bowl: Fruit[] = [...fruits, { id: 'c', name: 'cherry', grams: 8 }];
    render(<ListTable columns={sortable} rows={bowl} rowKey={(f) => f.id} />);
    const names = () =>
      screen
        .getAllByRole('row')
        .slice(1)
        .map((r) => r.children[0]!.textContent);
    const weight = screen.getByRole('columnheader', { name: /Weight/ });
    expect(weight.getAttribute('aria-sort')).toBe('none');
    expect(screen.getByRole('columnheader', { name: 'Actions' }).hasAttribute('aria-sort')).toBe(false);
    await user.click(within(weight).getByRole('button', { name: /Weight/ }));
    expect(weight.getAttribute('aria-sort')).toBe('ascending');
    expect(names()).toEqual(['cherry', 'banana', 'apple']);
    within(weight).getByRole('button').focus();
    await user.keyboard('{Enter}');
    expect(weight.getAttribute('aria-sort')).toBe('descending');
    expect(names()).toEqual(['apple', 'banana', 'cherry']);
    await user.keyboard(' ');
    expect(weight.getAttribute('aria-sort')).toBe('none');
    expect(names()).toEqual(['apple', 'banana', 'cherry']);
    await user.click(screen.getByRole('button', { name: /Name/ }));
    await user.click(screen.getByRole('button', { name: /Name/ }));
    expect(names()).toEqual(['cherry', 'banana', 'apple']);
  });

  it('changes a column’s width with the arrow keys on its handle, Home gives it back to the browser', async () => {
    const user = userEvent.setup();
    render(<ListTable columns={columns} rows={fruits} rowKey={(f) => f.id} />);
    const handle = screen.getByRole('separator', { name: 'Width of Name' });
    // The last column has no handle: its right edge is the table's.
    expect(screen.getAllByRole('separator')).toHaveLength(2);
    handle.focus();
    await user.keyboard('{ArrowRight}');
    const header = screen.getByRole('columnheader', { name: /^Name/ });
    const first = Number(handle.getAttribute('aria-valuenow'));
    expect(header.style.width).toBe(`${first}px`);
    await user.keyboard('{ArrowRight}{ArrowRight}{ArrowLeft}');
    expect(Number(handle.getAttribute('aria-valuenow'))).toBe(first + RESIZE_STEP);
    expect(header.style.width).toBe(`${first + RESIZE_STEP}px`);
    // Every cell of the column takes the width, so a long value ends in an ellipsis.
    expect(screen.getByRole('cell', { name: 'apple' }).style.maxWidth).toBe(`${first + RESIZE_STEP}px`);
    await user.keyboard('{Shift>}{ArrowLeft}{/Shift}');
    expect(Number(handle.getAttribute('aria-valuenow'))).toBe(Math.max(48, first - 3 * RESIZE_STEP));
    await user.keyboard('{Home}');
    expect(header.style.width).toBe('');
  });

  it('gives a text cell its whole text as its title, or the column’s title', () => {
    const titled: ListColumn<Fruit>[] = [columns[0]!, { ...columns[2]!, title: (f) => `eat ${f.name}` }];
    render(<ListTable columns={titled} rows={fruits} rowKey={(f) => f.id} />);
    expect(screen.getByRole('cell', { name: 'apple' }).getAttribute('title')).toBe('apple');
    expect(screen.getByRole('cell', { name: 'Eat apple' }).getAttribute('title')).toBe('eat apple');
  });
});
