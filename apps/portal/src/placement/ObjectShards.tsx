import { useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { ShardDto } from '@tributary/shared';
import { api } from '../api';
import { ListTable } from '../app/ListTable';
import { When } from '../app/When';

const STATE_LABEL: Record<ShardDto['state'], string> = {
  good: 'Good',
  suspect: 'Suspect: missing or damaged, being rebuilt',
  stale: 'Stale: of older bytes',
};

/**
 * An erasure-coded object's layout (docs/erasure.md): k data and m parity shards, where each one is
 * and its state. Nothing is shown for an object no erasure rule covers and that has no shards.
 */
export function ObjectShards({ path }: { path: string }) {
  const id = useId();
  const shards = useQuery({
    queryKey: ['placement', 'shards', path],
    queryFn: ({ signal }) => api.objectShards(path, signal),
    // Polled while shards are still being made or rebuilt.
    refetchInterval: (q) => {
      const e = q.state.data?.erasure;
      return e && e.shards.filter((s) => s.current && s.wanted).length < e.k + e.m ? 5_000 : false;
    },
  });
  const e = shards.data?.erasure;
  // Most objects have no shards: nothing at all is shown for them (nor when the question failed:
  // the copies above show the site's errors).
  if (!e) return null;
  return (
    <section aria-labelledby={`${id}-t`} className="object-shards">
      <h3 id={`${id}-t`}>Erasure-coded shards</h3>
      {
        <>
          <p className="muted" data-testid="erasure-layout">
            {`${e.k} data + ${e.m} parity shards, each at another ${e.domain}: any ${e.k} of them rebuild the object. `}
            {`${e.goodShards} of ${e.k + e.m} are good.`}
          </p>
          <ListTable
            className="list shards"
            caption={`Shards of ${path}`}
            captionHidden
            rows={[...e.shards].sort((a, b) => a.index - b.index || a.site.localeCompare(b.site))}
            rowKey={(x) => `${x.index}:${x.site}`}
            rowProps={() => ({ 'data-testid': 'shard' })}
            empty="No shards made yet."
            columns={[
              {
                id: 'index',
                header: 'Shard',
                rowHeader: true,
                cell: (x: ShardDto) => `${x.index + 1} (${x.index < e.k ? 'data' : 'parity'})`,
              },
              { id: 'site', header: 'Site', cell: (x: ShardDto) => x.site },
              { id: 'state', header: 'State', cell: (x: ShardDto) => STATE_LABEL[x.state] },
              { id: 'wanted', header: 'Wanted', cell: (x: ShardDto) => (x.wanted ? 'yes' : 'no') },
              {
                id: 'verified',
                header: 'Verified',
                cell: (x: ShardDto) => (x.verifiedAt ? <When iso={x.verifiedAt} /> : '—'),
              },
              { id: 'error', header: 'Error', cell: (x: ShardDto) => x.error ?? '' },
            ]}
          />
        </>
      }
    </section>
  );
}
