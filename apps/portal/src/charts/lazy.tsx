import { lazy, Suspense, type ComponentProps } from 'react';

/**
 * The charts, each loaded on first use: Recharts and `Charts.tsx` form one chunk of their own that
 * no screen's first paint waits for (the table or list beside a chart is already there).
 */
const PeerSeriesChartLazy = lazy(() => import('./Charts').then((m) => ({ default: m.PeerSeriesChart })));
const BarsLazy = lazy(() => import('./Charts').then((m) => ({ default: m.Bars })));

type PeerSeriesProps = ComponentProps<typeof PeerSeriesChartLazy>;
type BarsProps = ComponentProps<typeof BarsLazy>;

function Loading({ title }: { title: string }) {
  return <p className="muted small">Drawing {title.toLowerCase()}…</p>;
}

export function PeerSeriesChart(props: PeerSeriesProps) {
  return (
    <Suspense fallback={<Loading title={props.title} />}>
      <PeerSeriesChartLazy {...props} />
    </Suspense>
  );
}

export function Bars(props: BarsProps) {
  return (
    <Suspense fallback={<Loading title={props.title} />}>
      <BarsLazy {...props} />
    </Suspense>
  );
}
