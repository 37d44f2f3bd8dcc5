import { useMemo } from 'react';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import type { MetadataHitDto } from '@tributary/shared';
import { Link, useSearchParams } from 'react-router';
import { ApiError, api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { browseHref, formatBytes, parentPath } from '../format';
import { rememberAttributes } from './attributes';
import { narrow, validateQuery } from './queryAssist';
import { QueryForm } from './QueryForm';
import { SavedSearches } from './SavedSearches';
import { When } from '../app/When';
import { Bars } from '../charts/lazy';

const MAX_FACETS = 8;

/**
 * Metadata search: the text form with completion and inline errors, results with facets that
 * narrow the query, saved searches. URL: `/search?q=&scope=&kind=` (a search is a link).
 */
export function SearchPage() {
  const [params, setParams] = useSearchParams();
  const q = params.get('q') ?? '';
  const scope = params.get('scope') ?? '/';
  const kind = params.get('kind') === 'collection' ? 'collection' : 'object';
  const submitted = params.has('q');
  useTitle(q ? `Search: ${q}` : 'Search');

  const results = useInfiniteQuery({
    queryKey: ['search', q, scope, kind],
    enabled: submitted && validateQuery(q) === null,
    queryFn: async ({ pageParam, signal }) => {
      const r = await api.queryMetadata(
        {
          ...(q.trim() ? { q } : {}),
          scope,
          kind,
          limit: 100,
          cursor: pageParam,
          withTriples: true,
          ...(pageParam === undefined ? {} : { count: false }),
        },
        signal,
      );
      rememberAttributes(r.items.flatMap((i) => (i.triples ?? []).map((t) => t.attribute)));
      return r;
    },
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const first = results.data?.pages[0];
  const items = results.data?.pages.flatMap((p) => p.items) ?? [];
  // Facets: the attributes the first page of results carries (most common first; the API counts at
  // most 8 per request), counted over the whole result by a second request.
  const facetNames = useMemo(() => topAttributes(first?.items ?? [], MAX_FACETS), [first]);
  const facetCounts = useQuery({
    queryKey: ['search-facets', q, scope, kind, facetNames],
    enabled: first !== undefined && facetNames.length > 0,
    queryFn: ({ signal }) =>
      api.queryMetadata(
        {
          ...(q.trim() ? { q } : {}),
          scope,
          kind,
          limit: 0,
          count: false,
          facets: facetNames,
          facetLimit: 10,
        },
        signal,
      ),
  });
  const facets = Object.entries(facetCounts.data?.facets ?? {}).filter(([, values]) => values.length > 0);

  function run(next: { q: string; scope?: string; kind?: string }) {
    const p = new URLSearchParams();
    p.set('q', next.q);
    if ((next.scope ?? scope) !== '/') p.set('scope', next.scope ?? scope);
    if ((next.kind ?? kind) !== 'object') p.set('kind', next.kind ?? kind);
    setParams(p);
  }

  return (
    <div className="search">
      <section aria-labelledby="search-title" className="search-main">
        <h1 id="search-title">Search</h1>
        <QueryForm key={`${q}|${scope}|${kind}`} q={q} scope={scope} kind={kind} onRun={run} />
        {results.error && <ServerQueryError error={results.error} />}
        {first && (
          <p role="status" className="count">
            {first.totalIsEstimate
              ? `about ${(first.total ?? items.length).toLocaleString()} results`
              : first.total === 1
                ? '1 result'
                : `${(first.total ?? items.length).toLocaleString()} results`}
          </p>
        )}
        {results.isFetching && !results.isFetchingNextPage && <p role="status">Searching…</p>}
        <ListTable
          className="results"
          rows={items}
          rowKey={(it) => it.id}
          rowProps={() => ({ 'data-testid': 'search-result' })}
          empty={null}
          columns={[
            {
              id: 'name',
              header: 'Name',
              sortValue: (it) => it.name,
              title: (it) => it.path,
              cell: (it) => (
                <Link
                  to={
                    it.kind === 'collection'
                      ? browseHref(it.path)
                      : `${browseHref(parentPath(it.path))}?entry=${encodeURIComponent(it.name)}`
                  }
                >
                  {it.name}
                </Link>
              ),
            },
            {
              id: 'collection',
              header: 'Collection',
              cell: (it) => parentPath(it.path),
              sortValue: (it) => parentPath(it.path),
            },
            {
              id: 'size',
              header: 'Size',
              sortValue: (it) => (it.kind === 'object' ? it.size : null),
              className: 'num',
              cell: (it) => (it.kind === 'object' ? formatBytes(it.size) : '—'),
            },
            {
              id: 'modified',
              header: 'Modified',
              cell: (it) => <When iso={it.modifiedAt} />,
              sortValue: (it) => Date.parse(it.modifiedAt),
            },
            {
              id: 'metadata',
              header: 'Metadata',
              className: 'triples-inline',
              cell: (it) => (it.triples ?? []).map((t) => `${t.attribute}=${String(t.value)}`).join(', '),
            },
          ]}
        />
        {results.hasNextPage && (
          <button
            type="button"
            onClick={() => void results.fetchNextPage()}
            disabled={results.isFetchingNextPage}
          >
            {results.isFetchingNextPage ? 'Loading…' : 'More results'}
          </button>
        )}
      </section>
      <aside className="search-side" aria-label="Facets and saved searches">
        {facets.length > 0 && (
          <section aria-labelledby="facets-title">
            <h2 id="facets-title">Narrow down</h2>
            {facets.map(([attribute, values]) => (
              <fieldset key={attribute} className="facet">
                <legend>{attribute}</legend>
                <Bars
                  testId="facet-bars"
                  title={`Results per value of ${attribute}`}
                  captionHidden
                  data={values.map((v) => ({ label: String(v.value), value: v.count }))}
                  format={(n) => n.toLocaleString()}
                  onSelect={(label) => {
                    const v = values.find((x) => String(x.value) === label);
                    if (v) run({ q: narrow(q, attribute, v.value) });
                  }}
                />
                <ul>
                  {values.map((v) => (
                    <li key={String(v.value)}>
                      <button
                        type="button"
                        className="link"
                        onClick={() => run({ q: narrow(q, attribute, v.value) })}
                        aria-label={`Narrow to ${attribute} = ${String(v.value)} (${v.count})`}
                      >
                        {String(v.value)}
                      </button>{' '}
                      <span className="muted">{v.count}</span>
                    </li>
                  ))}
                </ul>
              </fieldset>
            ))}
          </section>
        )}
        <SavedSearches q={q} scope={scope} kind={kind} onRun={run} canSave={submitted} />
      </aside>
    </div>
  );
}

function ServerQueryError({ error }: { error: unknown }) {
  // 422 INVALID_QUERY: the message already shows the text with a caret; keep its layout.
  if (error instanceof ApiError && error.code === 'INVALID_QUERY') {
    return (
      <div role="alert" className="error-note">
        <pre>{error.message}</pre>
      </div>
    );
  }
  return <ErrorNote error={error} />;
}

/** Attribute names in these hits, the most frequent first. */
function topAttributes(items: MetadataHitDto[], max: number): string[] {
  const counts = new Map<string, number>();
  for (const it of items) {
    for (const a of new Set((it.triples ?? []).map((t) => t.attribute)))
      counts.set(a, (counts.get(a) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, max)
    .map(([a]) => a);
}
