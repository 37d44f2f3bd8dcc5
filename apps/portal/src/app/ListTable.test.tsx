// @vitest-environment happy-dom
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { ListTable, type ListColumn } from './ListTable';

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
    expect(table.className).toBe('list');
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
    expect(screen.getByRole('columnheader', { name: 'Name' }).firstElementChild).toBeNull();
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
});
