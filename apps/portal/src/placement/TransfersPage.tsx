import { useQuery } from '@tanstack/react-query';
import { COPY_STATES } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable } from '../app/ListTable';
import { useTitle } from '../app/Layout';
import { formatBytes } from '../format';
import { When } from '../app/When';
import { Bars } from '../charts/lazy';

const POLL_MS = 2_000;

/** Percent done of a transfer, whole numbers (a zero-byte object is done). */
export function percentDone(done: number, size: number): number {
  if (size <= 0) return 100;
  return Math.min(100, Math.floor((done / size) * 100));
}

/**
 * This site's mover (administrators): copies per state, transfers in flight with their progress,
 * failures with their errors and next attempt, and the rate of bytes coming in.
 */
export function TransfersPage() {
  useTitle('Transfers');
  const status = useQuery({
    queryKey: ['placement', 'mover'],
    queryFn: ({ signal }) => api.moverStatus(signal),
    refetchInterval: POLL_MS,
  });
  const s = status.data;
  const cache = useQuery({
    queryKey: ['cache', 'status'],
    queryFn: ({ signal }) => api.cacheStatus(signal),
    refetchInterval: POLL_MS,
  });
  const k = cache.data;
  return (
    <section aria-labelledby="transfers-title" className="transfers">
      <h1 id="transfers-title">Transfers</h1>
      <ErrorNote error={status.error} />
      {!s && !status.error && <p role="status">Loading…</p>}
      {s && (
        <>
          <p>
            The mover of site <strong>{s.site}</strong> copies in what placement rules want here:{' '}
            <span data-testid="mover-rate">{formatBytes(s.bytesPerSecond)}/s</span> over the last minute,{' '}
            {formatBytes(s.bytesTotal)} since the site started; {s.settings.concurrency} objects at a time
            {s.settings.bandwidthMiBs > 0 ? `, at most ${s.settings.bandwidthMiBs} MiB/s` : ''}. The scrub
            re-hashes copies at{' '}
            {s.settings.scrubRateMiBs > 0 ? `${s.settings.scrubRateMiBs} MiB/s` : 'no rate (off)'}.
          </p>
          <h2>Copies here</h2>
          <ListTable
            className="list mover-states"
            caption="Copies at this site per state"
            captionHidden
            rows={COPY_STATES.map((state) => ({ state, count: s.states[state] ?? 0 }))}
            rowKey={(r) => r.state}
            columns={[
              { id: 'state', header: 'State', rowHeader: true, cell: (r) => r.state },
              { id: 'count', header: 'Copies', className: 'num', cell: (r) => r.count.toLocaleString() },
            ]}
          />
          <h2>Cache</h2>
          <ErrorNote error={cache.error} />
          {k && (
            <p data-testid="cache-status">
              {k.enabled ? (
                <>
                  Objects read here are kept as cached copies, at most {formatBytes(k.limitBytes)}:{' '}
                  {formatBytes(k.usedBytes)} in {k.copies.toLocaleString()} copies (
                  {formatBytes(k.pinnedBytes)} pinned). Since the site started: {k.hits.toLocaleString()}{' '}
                  hits, {k.misses.toLocaleString()} misses, {formatBytes(k.bytesIn)} faulted in,{' '}
                  {k.evictions.toLocaleString()} evictions.
                </>
              ) : (
                'This site keeps no cache (CACHE_MAX_BYTES is 0): reads of bytes held elsewhere pass through.'
              )}
            </p>
          )}
          <h2>In flight</h2>
          {s.inFlight.length > 0 && (
            <Bars
              testId="transfer-bars"
              title="Percent copied of each transfer in flight"
              data={s.inFlight.map((t) => ({
                label: `${t.path.slice(t.path.lastIndexOf('/') + 1)} from ${t.from}`,
                value: percentDone(t.bytesDone, t.size),
              }))}
              format={(n) => `${n} %`}
            />
          )}
          <ListTable
            className="list mover-in-flight"
            caption="Transfers in flight"
            captionHidden
            rows={s.inFlight}
            rowKey={(t) => `${t.path}:${t.from}`}
            rowProps={() => ({ 'data-testid': 'transfer' })}
            empty="Nothing is being copied."
            columns={[
              {
                id: 'path',
                header: 'Object',
                rowHeader: true,
                cell: (t) => t.path,
                sortValue: (t) => t.path,
              },
              { id: 'from', header: 'From', cell: (t) => t.from, sortValue: (t) => t.from },
              {
                id: 'progress',
                header: 'Progress',
                sortValue: (t) => percentDone(t.bytesDone, t.size),
                cell: (t) => (
                  <>
                    <progress
                      max={100}
                      value={percentDone(t.bytesDone, t.size)}
                      aria-label={`${t.path} copied`}
                    />{' '}
                    {formatBytes(t.bytesDone)} of {formatBytes(t.size)}
                  </>
                ),
              },
              { id: 'started', header: 'Started', cell: (t) => <When iso={t.startedAt} /> },
            ]}
          />
          <h2>Failed</h2>
          <ListTable
            className="list mover-failed"
            caption="Failed copies"
            captionHidden
            rows={s.failed}
            rowKey={(f) => f.path}
            rowProps={() => ({ 'data-testid': 'failure' })}
            empty="No failures."
            columns={[
              {
                id: 'path',
                header: 'Object',
                rowHeader: true,
                cell: (f) => f.path,
                sortValue: (f) => f.path,
              },
              { id: 'error', header: 'Error', cell: (f) => f.error },
              {
                id: 'attempts',
                header: 'Attempts',
                className: 'num',
                cell: (f) => String(f.attempts),
                sortValue: (f) => f.attempts,
              },
              {
                id: 'next',
                header: 'Next attempt',
                cell: (f) => (f.nextAttemptAt ? <When iso={f.nextAttemptAt} /> : '—'),
              },
            ]}
          />
        </>
      )}
    </section>
  );
}
