import { useId, useState, type FormEvent } from 'react';
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { PlacementRuleDto, PlacementSiteDto } from '@tributary/shared';
import { Link } from 'react-router';
import { api } from '../api';
import { useConfirm } from '../app/ConfirmDialog';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable, type ListColumn } from '../app/ListTable';
import { browseHref } from '../format';
import { describeRule, EMPTY_RULE_FORM, isExpired, ruleRequest, type RuleForm } from './rules';
import { SubscribeForm } from './SubscribeForm';
import { When } from '../app/When';

/**
 * A collection's placement rules (docs/placement.md): its own and those inherited from the
 * collections above it; its owners add and remove rules here. The sites' movers do the copying.
 */
export function CopiesPanel({ path }: { path: string }) {
  const id = useId();
  const [confirm, confirmation] = useConfirm();
  const queryClient = useQueryClient();
  const key = ['placement', 'rules', path];
  const rules = useInfiniteQuery({
    queryKey: key,
    queryFn: ({ pageParam, signal }) => api.placementRules({ path, limit: 200, cursor: pageParam }, signal),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor,
  });
  const entry = useQuery({ queryKey: ['stat', path], queryFn: () => api.stat(path) });
  const canOwn = entry.data?.access === 'own';
  const invalidate = () => void queryClient.invalidateQueries({ queryKey: ['placement', 'rules'] });
  const remove = useMutation({
    mutationFn: (rule: PlacementRuleDto) =>
      rule.subscription ? api.unsubscribe(rule.id) : api.removePlacementRule(rule.id),
    onSuccess: invalidate,
  });
  const items = rules.data?.pages.flatMap((p) => p.items) ?? [];

  function confirmRemove(rule: PlacementRuleDto) {
    const question = rule.subscription
      ? {
          title: `End the subscription of ${rule.sites?.join(', ') ?? ''} to ${rule.path}?`,
          detail: 'The copies made stay.',
          action: 'Unsubscribe',
        }
      : {
          title: `Remove the rule "${describeRule(rule)}" from ${rule.path}?`,
          detail: 'Copies it alone wants are removed.',
          action: 'Remove',
        };
    void confirm(question).then((yes) => yes && remove.mutate(rule));
  }

  const columns: ListColumn<PlacementRuleDto>[] = [
    {
      id: 'copies',
      header: 'Keep',
      rowHeader: true,
      cell: (r) => describeRule(r),
      sortValue: (r) => describeRule(r),
    },
    {
      id: 'condition',
      header: 'Only objects where',
      cell: (r) => r.condition ?? <span className="muted">all objects</span>,
    },
    {
      id: 'expires',
      header: 'Until',
      sortValue: (r) => (r.expiresAt ? Date.parse(r.expiresAt) : null),
      cell: (r) =>
        r.expiresAt ? (
          <>
            <When iso={r.expiresAt} /> {isExpired(r) && <span className="muted">(expired)</span>}
          </>
        ) : (
          <span className="muted">no end</span>
        ),
    },
    { id: 'owner', header: 'Set by', cell: (r) => r.owner ?? '—', sortValue: (r) => r.owner },
    {
      id: 'from',
      header: 'Set on',
      cell: (r) =>
        r.inheritedFrom ? (
          <Link to={browseHref(r.inheritedFrom)} title="Inherited from this collection">
            {r.inheritedFrom}
          </Link>
        ) : (
          'this collection'
        ),
    },
    {
      id: 'actions',
      header: 'Actions',
      headerHidden: true,
      className: 'actions',
      cell: (r) =>
        canOwn && !r.inheritedFrom ? (
          <button
            type="button"
            className="danger"
            onClick={() => confirmRemove(r)}
            disabled={remove.isPending}
          >
            {r.subscription ? 'Unsubscribe' : 'Remove'}
            <span className="visually-hidden"> the rule {describeRule(r)}</span>
          </button>
        ) : null,
    },
  ];

  return (
    <section aria-labelledby={`${id}-t`} className="copies-panel">
      {confirmation}
      <h2 id={`${id}-t`}>Copies</h2>
      <p className="muted">
        Placement rules keep copies of everything in this collection at several sites. Objects no rule covers
        stay where they were written.
      </p>
      <ErrorNote error={rules.error} />
      {rules.data && (
        <ListTable
          className="list placement-rules"
          caption="Placement rules"
          captionHidden
          rows={items}
          rowKey={(r) => r.id}
          rowProps={() => ({ 'data-testid': 'placement-rule' })}
          empty="No placement rules: objects keep the copies they have."
          columns={columns}
        />
      )}
      {rules.hasNextPage && (
        <button type="button" onClick={() => void rules.fetchNextPage()}>
          More rules
        </button>
      )}
      <ErrorNote error={remove.error} />
      {canOwn && <AddRule path={path} onAdded={invalidate} />}
      {canOwn && <SubscribeForm path={path} onSubscribed={invalidate} />}
    </section>
  );
}

function AddRule({ path, onAdded }: { path: string; onAdded: () => void }) {
  const id = useId();
  const [form, setForm] = useState<RuleForm>(EMPTY_RULE_FORM);
  const sites = useQuery({
    queryKey: ['placement', 'sites'],
    queryFn: ({ signal }) => api.placementSites(signal),
    staleTime: 60_000,
  });
  const add = useMutation({
    mutationFn: () => api.addPlacementRule(ruleRequest(path, form)),
    onSuccess: () => {
      setForm(EMPTY_RULE_FORM);
      onAdded();
    },
  });
  const choices: PlacementSiteDto[] = sites.data ?? [];
  const most = form.sites.length > 0 ? form.sites.length : Math.max(choices.length, 1);

  function toggle(site: string, on: boolean) {
    setForm((f) => ({ ...f, sites: on ? [...f.sites, site] : f.sites.filter((s) => s !== site) }));
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!add.isPending) add.mutate();
  }

  return (
    <form onSubmit={submit} className="stack-form" aria-labelledby={`${id}-legend`}>
      <fieldset>
        <legend id={`${id}-legend`}>Add a rule</legend>
        <label htmlFor={`${id}-c`}>Number of copies</label>
        <input
          id={`${id}-c`}
          type="number"
          min={1}
          max={most}
          required
          value={form.copies}
          onChange={(e) => setForm({ ...form, copies: e.target.value })}
        />
        <fieldset>
          <legend>At sites (none ticked: any site)</legend>
          {choices.map((s) => (
            <label key={s.id}>
              <input
                type="checkbox"
                checked={form.sites.includes(s.id)}
                onChange={(e) => toggle(s.id, e.target.checked)}
              />{' '}
              {s.name === s.id ? s.id : `${s.name} (${s.id})`}
              {s.local && <span className="muted"> · this site</span>}
            </label>
          ))}
          <ErrorNote error={sites.error} />
        </fieldset>
        <label htmlFor={`${id}-w`}>Only objects where (optional)</label>
        <input
          id={`${id}-w`}
          placeholder="filetype = fits and size > 1e6"
          value={form.condition}
          onChange={(e) => setForm({ ...form, condition: e.target.value })}
        />
        <label htmlFor={`${id}-e`}>Until (optional)</label>
        <input
          id={`${id}-e`}
          type="datetime-local"
          value={form.expires}
          onChange={(e) => setForm({ ...form, expires: e.target.value })}
        />
        <button type="submit" disabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add rule'}
        </button>
      </fieldset>
      <ErrorNote error={add.error} />
    </form>
  );
}
