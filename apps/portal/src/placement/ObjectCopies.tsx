import { useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { CopyDto } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { copyKind, copyStateLabel } from './rules';
import { tierLabel, tiersMoving } from './tiers';
import { When } from '../app/When';

/** Copies still moving are polled; settled ones are not. */
const MOVING = new Set(['pending', 'copying', 'stale', 'suspect', 'failed']);

/** One object's copies: at which site, in which state, and which the placement rules want. */
export function ObjectCopies({ path }: { path: string }) {
  const id = useId();
  const copies = useQuery({
    queryKey: ['placement', 'copies', path],
    queryFn: ({ signal }) => api.objectCopies(path, signal),
    refetchInterval: (q) => (q.state.data?.copies.some((c) => MOVING.has(c.state)) ? 5_000 : false),
  });
  // The site's copy on a compound resource: its tiers (cache, archive, staging) from the stat.
  const stat = useQuery({
    queryKey: ['stat', path],
    queryFn: () => api.stat(path),
    refetchInterval: (q) => (tiersMoving(q.state.data?.replicas) ? 2_000 : false),
  });
  const tiers = new Map(
    (stat.data?.replicas ?? []).filter((r) => r.tier).map((r) => [r.site, tierLabel(r.tier)] as const),
  );
  const c = copies.data;
  return (
    <section aria-labelledby={`${id}-t`} className="object-copies">
      <h3 id={`${id}-t`}>Copies</h3>
      <ErrorNote error={copies.error} />
      {c && (
        <>
          <p className="muted" data-testid="wanted-sites">
            {c.wantedSites.length > 0
              ? `Placement rules want copies at ${c.wantedSites.join(', ')}.`
              : 'No placement rule covers this object: it keeps the copies it has.'}
          </p>
          <ListTable
            className="list copies"
            caption={`Copies of ${path}`}
            captionHidden
            rows={c.copies}
            rowKey={(x) => x.site}
            rowProps={() => ({ 'data-testid': 'copy' })}
            empty="No copies recorded."
            columns={[
              { id: 'site', header: 'Site', rowHeader: true, cell: (x: CopyDto) => x.site },
              {
                id: 'state',
                header: 'State',
                // A cached copy says so (read there, evictable): the table keeps its narrow columns.
                cell: (x: CopyDto) => copyStateLabel(x) + (x.cached ? ` · ${copyKind(x)}` : ''),
              },
              { id: 'wanted', header: 'Wanted', cell: (x: CopyDto) => (x.wanted ? 'yes' : 'no') },
              {
                id: 'verified',
                header: 'Verified',
                cell: (x: CopyDto) => (x.verifiedAt ? <When iso={x.verifiedAt} /> : '—'),
              },
              // Only with a copy on a compound resource: other tables keep their columns.
              ...(tiers.size > 0
                ? [{ id: 'tier', header: 'Storage', cell: (x: CopyDto) => tiers.get(x.site) ?? '' }]
                : []),
              { id: 'error', header: 'Error', cell: (x: CopyDto) => x.error ?? '' },
            ]}
          />
        </>
      )}
    </section>
  );
}
