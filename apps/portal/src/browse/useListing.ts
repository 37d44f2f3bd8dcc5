import { useCallback, useMemo, useState } from 'react';
import { useQueries, useQueryClient } from '@tanstack/react-query';
import type { EntryDto, Page } from '@tributary/shared';
import { api } from '../api';
import { PAGE_SIZE, pageRequest, pagesFor, rowAt, wantPages } from './listingPages';

type Sort = 'name' | 'size' | 'modified';

/**
 * A collection's children as pages of 500 fetched where the table looks: page 0 at once (it carries
 * the count), then the pages the row window reaches. A page right after a loaded one follows its
 * cursor; a page after a gap (the end, a scrollbar drag) is asked for by offset, so it costs one
 * request wherever it is. Pages are cached per `['children', path, sort, order, page]`.
 */
export function useListing(path: string, sort: Sort, order: 'asc' | 'desc') {
  const queryClient = useQueryClient();
  const listingKey = `${path}\u0000${sort}\u0000${order}`;
  const [wanted, setWanted] = useState<{ key: string; pages: readonly number[] }>({
    key: listingKey,
    pages: [0],
  });
  const pageList = wanted.key === listingKey ? wanted.pages : [0];
  const keyOf = useCallback(
    (page: number) => ['children', path, sort, order, page] as const,
    [path, sort, order],
  );

  const results = useQueries({
    queries: pageList.map((page) => ({
      queryKey: keyOf(page),
      queryFn: ({ signal }: { signal: AbortSignal }) => {
        const previous = page > 0 ? queryClient.getQueryData<Page<EntryDto>>(keyOf(page - 1)) : undefined;
        return api.listChildren(
          { path, sort, order, limit: PAGE_SIZE, ...pageRequest(page, previous) },
          signal,
        );
      },
    })),
  });

  const first = results[0];
  const total = first?.data?.total ?? 0;
  const pages = useMemo(() => {
    const m = new Map<number, EntryDto[]>();
    results.forEach((r, i) => {
      const page = pageList[i];
      if (r.data && page !== undefined) m.set(page, r.data.items);
    });
    return m;
  }, [results, pageList]);
  const loaded = useMemo(
    () => [...pages.keys()].sort((a, b) => a - b).flatMap((p) => pages.get(p) ?? []),
    [pages],
  );

  /** The table shows rows `start .. end - 1`: make sure their pages are (being) fetched. */
  const showRows = useCallback(
    (start: number, end: number) => {
      const needed = pagesFor(start, end, total);
      setWanted((prev) => {
        const base = prev.key === listingKey ? prev.pages : [0];
        const next = wantPages(base, needed);
        return next === base && prev.key === listingKey ? prev : { key: listingKey, pages: next };
      });
    },
    [total, listingKey],
  );

  return {
    total,
    /** Every loaded entry, in listing order (the pages held, not necessarily contiguous). */
    loaded,
    rowAt: (index: number) => rowAt(pages, index),
    showRows,
    isPending: first?.isPending ?? true,
    error: results.find((r) => r.error)?.error ?? null,
    isFetching: results.some((r) => r.isFetching),
    refetch: () => Promise.all(results.map((r) => r.refetch())),
  };
}
