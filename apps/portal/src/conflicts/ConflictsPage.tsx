import { useId, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import {
  CONFLICT_KINDS,
  CONFLICT_POLICIES,
  CONFLICT_STATUS_FILTERS,
  type ConflictDto,
  type ConflictKind,
  type ConflictPolicy,
} from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { deadlineText, groupByEntry, KIND_TEXT, sitesOf } from './conflictDiff';

/**
 * Conflicts between sites: counts by kind, a filtered list (`/conflicts?status=&kind=&path=`),
 * many decided at once, and a collection's default policies.
 */
export function ConflictsPage() {
  useTitle('Conflicts');
  const [params, setParams] = useSearchParams();
  const status = CONFLICT_STATUS_FILTERS.find((s) => s === params.get('status')) ?? 'open';
  const kind = CONFLICT_KINDS.find((k) => k === params.get('kind'));
  const path = params.get('path') ?? undefined;
  const mine = params.get('involving') === 'me';
  const queryClient = useQueryClient();
  const summary = useQuery({
    queryKey: ['conflicts', 'summary'],
    queryFn: ({ signal }) => api.conflictSummary(signal),
  });
  const list = useInfiniteQuery({
    queryKey: ['conflicts', 'list', status, kind, path, mine],
    queryFn: ({ pageParam, signal }) =>
      api.listConflicts(
        { status, kind, path, involving: mine ? 'me' : undefined, limit: 100, cursor: pageParam },
        signal,
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
    refetchInterval: 30_000,
  });
  const items = list.data?.pages.flatMap((p) => p.items) ?? [];
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [bulkSite, setBulkSite] = useState('');
  const bulk = useMutation({
    mutationFn: (action: ConflictPolicy) =>
      api.decideConflicts({
        filter: { ids: [...selected] },
        action,
        ...(action === 'prefer-site' ? { site: bulkSite } : {}),
      }),
    onSuccess: () => {
      setSelected(new Set());
      void queryClient.invalidateQueries({ queryKey: ['conflicts'] });
    },
  });
  const selectedConflicts = items.filter((c) => selected.has(c.id));
  const groups = groupByEntry(items);
  const ordered = groups.flatMap((g) => g.items);
  const follows = new Set(groups.flatMap((g) => g.items.slice(1).map((c) => c.id)));
  const sites = sitesOf(selectedConflicts);
  const now = new Date();

  function setFilter(key: string, value: string | null) {
    const next = new URLSearchParams(params);
    if (value === null || value === '') next.delete(key);
    else next.set(key, value);
    setParams(next, { replace: true });
    setSelected(new Set());
  }

  return (
    <section aria-labelledby="conflicts-title" className="conflicts">
      <h1 id="conflicts-title">Conflicts</h1>
      <ErrorNote error={summary.error} />
      {summary.data && (
        <ul className="counts" aria-label="Open conflicts by kind">
          <li>
            <strong>{summary.data.open}</strong> open
          </li>
          {CONFLICT_KINDS.map((k) => (
            <li key={k}>
              <button
                type="button"
                className="link"
                onClick={() => setFilter('kind', k)}
                aria-label={`${KIND_TEXT[k]} (${k}): ${summary.data.byKind[k] ?? 0}`}
              >
                {KIND_TEXT[k]}: <strong>{summary.data.byKind[k] ?? 0}</strong>
              </button>
            </li>
          ))}
          <li>
            <button type="button" className="link" onClick={() => setFilter('involving', mine ? null : 'me')}>
              involving you: <strong>{summary.data.involvingMe}</strong>
            </button>
          </li>
        </ul>
      )}
      <div className="filters">
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setFilter('status', e.target.value)}>
            {CONFLICT_STATUS_FILTERS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind{' '}
          <select value={kind ?? ''} onChange={(e) => setFilter('kind', e.target.value)}>
            <option value="">any</option>
            {CONFLICT_KINDS.map((k) => (
              <option key={k} value={k}>
                {KIND_TEXT[k]}
              </option>
            ))}
          </select>
        </label>
        <label>
          <input
            type="checkbox"
            checked={mine}
            onChange={(e) => setFilter('involving', e.target.checked ? 'me' : null)}
          />{' '}
          only those involving me
        </label>
        {path && (
          <span>
            below <code>{path}</code>{' '}
            <button type="button" onClick={() => setFilter('path', null)}>
              any path
            </button>
          </span>
        )}
      </div>
      <ErrorNote error={list.error} />
      {list.isPending && <p role="status">Loading…</p>}
      {list.data && items.length === 0 && <p role="status">No conflicts here.</p>}
      {selected.size > 0 && (
        <div className="bulk-bar" role="group" aria-label="Decide the selected conflicts">
          <span>{selected.size} selected:</span>
          <button type="button" onClick={() => bulk.mutate('keep')} disabled={bulk.isPending}>
            Keep provisional winners
          </button>
          <button type="button" onClick={() => bulk.mutate('newest')} disabled={bulk.isPending}>
            Newest version wins
          </button>
          <label>
            Prefer site{' '}
            <select value={bulkSite} onChange={(e) => setBulkSite(e.target.value)}>
              <option value="">choose…</option>
              {sites.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            onClick={() => bulk.mutate('prefer-site')}
            disabled={bulk.isPending || bulkSite === ''}
          >
            Apply
          </button>
        </div>
      )}
      <ErrorNote error={bulk.error} />
      {bulk.data && (
        <div role="status" className="bulk-result">
          Decided {bulk.data.decided.length}.
          {bulk.data.skipped.length > 0 && (
            <ul>
              {bulk.data.skipped.map((s) => (
                <li key={s.id}>
                  {s.id.slice(0, 8)}: {s.reason}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {groups.some((g) => g.items.length > 1) && (
        <p className="muted small">
          Conflicts about the same entry are listed together, the first of them named; “↳” marks the others.
        </p>
      )}
      <ListTable
        className="list conflict-list"
        rows={ordered}
        rowKey={(c) => c.id}
        rowProps={(c) => ({
          'data-testid': 'conflict-row',
          className: follows.has(c.id) ? 'grouped' : undefined,
        })}
        empty={null}
        columns={[
          {
            id: 'select',
            header: (
              <input
                type="checkbox"
                aria-label="Select all decidable conflicts"
                checked={
                  items.some((c) => c.canDecide) &&
                  items.filter((c) => c.canDecide).every((c) => selected.has(c.id))
                }
                onChange={(e) =>
                  setSelected(
                    e.target.checked ? new Set(items.filter((c) => c.canDecide).map((c) => c.id)) : new Set(),
                  )
                }
              />
            ),
            headerClassName: 'check',
            className: 'check',
            cell: (c) => (
              <input
                type="checkbox"
                aria-label={`Select conflict about ${c.entry.label}`}
                disabled={!c.canDecide}
                checked={selected.has(c.id)}
                onChange={() =>
                  setSelected((prev) => {
                    const next = new Set(prev);
                    if (next.has(c.id)) next.delete(c.id);
                    else next.add(c.id);
                    return next;
                  })
                }
              />
            ),
          },
          {
            id: 'what',
            header: 'About',
            sortValue: (c) => c.entry.label,
            className: 'wrap',
            cell: (c) => (
              <>
                {follows.has(c.id) && <span aria-hidden="true">↳ </span>}
                <Link to={`/conflicts/${c.id}`} title={c.entry.path ?? undefined}>
                  {c.entry.label}
                </Link>
                {c.entry.path && c.entry.type !== 'attribute' && (
                  <div className="muted small ellipsis" title={c.entry.path}>
                    {c.entry.path}
                  </div>
                )}
                {c.involvesMe && <span className="badge badge-mine small"> you</span>}
              </>
            ),
          },
          {
            id: 'changed',
            header: 'What changed',
            sortValue: (c) => `${KIND_TEXT[c.kind]} ${c.story}`,
            className: 'wrap',
            cell: (c) => (
              <>
                <span className="kind-tag">{KIND_TEXT[c.kind]}</span> {c.story}
              </>
            ),
          },
          { id: 'sites', header: 'Sites', cell: (c) => sitesText(c), sortValue: (c) => sitesText(c) },
          {
            id: 'status',
            header: 'Decide within',
            sortValue: (c) => (c.status === 'open' ? Date.parse(c.deadline) : null),
            cell: (c) =>
              c.status === 'open' ? (
                <time dateTime={c.deadline}>{deadlineText(c.deadline, now).replace(' left', '')}</time>
              ) : (
                c.status
              ),
          },
        ]}
      />
      {list.hasNextPage && (
        <button type="button" onClick={() => void list.fetchNextPage()}>
          More
        </button>
      )}
      <Policies />
    </section>
  );
}

/** The sites with a version, each once: `lsu vs tulane`. */
function sitesText(c: ConflictDto): string {
  const sites =
    c.kind === 'same-name' && c.contenders.length > 0
      ? c.contenders.map((x) => x.site)
      : c.versions.map((v) => v.site);
  return [...new Set(sites)].sort().join(' vs ');
}

/** Default decisions for a collection, applied after each cycle to open conflicts below it. */
function Policies() {
  const id = useId();
  const queryClient = useQueryClient();
  const [path, setPath] = useState('/');
  const [shown, setShown] = useState('/');
  const [kind, setKind] = useState<ConflictKind>('update');
  const [policy, setPolicy] = useState<ConflictPolicy>('keep');
  const [site, setSite] = useState('');
  const list = useQuery({
    queryKey: ['conflicts', 'policies', shown],
    queryFn: () => api.conflictPolicies(shown),
  });
  const set = useMutation({
    mutationFn: () =>
      api.setConflictPolicy({ path, kind, policy, ...(policy === 'prefer-site' ? { site } : {}) }),
    onSuccess: () => {
      setShown(path);
      void queryClient.invalidateQueries({ queryKey: ['conflicts', 'policies'] });
    },
  });
  const remove = useMutation({
    mutationFn: (p: { path: string; kind: ConflictKind }) => api.removeConflictPolicy(p.path, p.kind),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['conflicts', 'policies'] }),
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    set.mutate();
  }
  return (
    <section aria-labelledby={`${id}-t`} className="policies">
      <h2 id={`${id}-t`}>Default policies</h2>
      <p className="muted">
        A collection&apos;s owner can decide conflicts below it automatically after each replication cycle.
      </p>
      <form onSubmit={submit} className="inline-form">
        <label htmlFor={`${id}-p`}>Collection</label>
        <input id={`${id}-p`} value={path} onChange={(e) => setPath(e.target.value)} required />
        <label htmlFor={`${id}-k`}>Kind</label>
        <select id={`${id}-k`} value={kind} onChange={(e) => setKind(e.target.value as ConflictKind)}>
          {CONFLICT_KINDS.map((k) => (
            <option key={k}>{k}</option>
          ))}
        </select>
        <label htmlFor={`${id}-pol`}>Policy</label>
        <select id={`${id}-pol`} value={policy} onChange={(e) => setPolicy(e.target.value as ConflictPolicy)}>
          {CONFLICT_POLICIES.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </select>
        {policy === 'prefer-site' && (
          <>
            <label htmlFor={`${id}-s`}>Site</label>
            <input id={`${id}-s`} value={site} onChange={(e) => setSite(e.target.value)} required />
          </>
        )}
        <button type="submit" disabled={set.isPending}>
          Set policy
        </button>
        <button type="button" onClick={() => setShown(path)}>
          Show policies at or below
        </button>
      </form>
      <ErrorNote error={set.error} />
      <ErrorNote error={list.error} />
      <ErrorNote error={remove.error} />
      {list.data && (
        <ListTable
          className="list"
          rows={list.data}
          rowKey={(p) => `${p.path}|${p.kind}`}
          empty={`No policies at or below ${shown}.`}
          columns={[
            { id: 'path', header: 'Collection', cell: (p) => p.path },
            { id: 'kind', header: 'Kind', cell: (p) => p.kind },
            {
              id: 'policy',
              header: 'Policy',
              cell: (p) => `${p.policy}${p.site ? ` (${p.site})` : ''}`,
            },
            { id: 'setBy', header: 'Set by', cell: (p) => p.setBy ?? '—' },
            {
              id: 'actions',
              header: 'Actions',
              headerHidden: true,
              cell: (p) => (
                <button type="button" onClick={() => remove.mutate({ path: p.path, kind: p.kind })}>
                  Remove
                </button>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}
