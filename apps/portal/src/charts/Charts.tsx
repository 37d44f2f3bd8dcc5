/**
 * The portal's charts, drawn with Recharts (SVG). This module is only ever imported through
 * `charts/lazy.tsx`, so Recharts stays out of the first chunk and loads with the first screen that
 * shows a chart. Each chart is a `<figure>` with a caption and, for screen readers, a table of the
 * numbers it draws; bars carry their values as labels.
 */
import {
  Bar,
  BarChart,
  CartesianGrid,
  LabelList,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import { themeColor, useTheme } from '../app/theme';
import type { LagHistory } from '../sites/lagHistory';
import { MINUTE, timeTicks } from './time';

const SERIES = ['--chart-1', '--chart-2', '--chart-3', '--chart-4', '--chart-5'];
const FALLBACK = ['#0b5cad', '#b5520b', '#2e7d32', '#8e24aa', '#c2185b'];

/** The theme's colours (read again when the theme changes: SVG attributes take no `var()`). */
function useColors() {
  useTheme();
  return {
    series: (i: number) => themeColor(SERIES[i % SERIES.length]!, FALLBACK[i % FALLBACK.length]!),
    grid: themeColor('--chart-grid', '#d6dbe1'),
    text: themeColor('--fg', '#1b1f24'),
    muted: themeColor('--muted', '#5b6470'),
    bg: themeColor('--bg', '#ffffff'),
  };
}

function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

export interface PeerSeriesProps {
  history: LagHistory;
  /** Which value of each sample to draw. */
  measure: 'lagSeconds' | 'backlog';
  title: string;
  /** How a value reads (axis, tooltip, table). */
  format: (value: number) => string;
  /** Start and end of the time axis, milliseconds since the epoch. */
  from: number;
  to: number;
  testId?: string;
}

/** One line per peer over time (replication lag or backlog on the Sites page). */
export function PeerSeriesChart({ history, measure, title, format, from, to, testId }: PeerSeriesProps) {
  const colors = useColors();
  const peers = Object.keys(history).sort();
  // The axis starts at the first sample when the site has kept less than the whole window.
  const first = Math.min(to, ...peers.flatMap((p) => (history[p] ?? []).map((x) => x.at)));
  const start = Math.max(from, first - MINUTE);
  return (
    <figure className="chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <div aria-hidden="true">
        <ResponsiveContainer width="100%" height={200}>
          <LineChart margin={{ top: 8, right: 16, bottom: 0, left: 8 }} accessibilityLayer={false}>
            <CartesianGrid stroke={colors.grid} strokeDasharray="3 3" />
            <XAxis
              dataKey="at"
              type="number"
              scale="time"
              domain={[start, to]}
              ticks={timeTicks(start, to)}
              tickFormatter={clock}
              stroke={colors.muted}
              allowDuplicatedCategory={false}
            />
            <YAxis tickFormatter={format} stroke={colors.muted} width={64} allowDecimals={false} />
            <Tooltip
              labelFormatter={(v) => clock(Number(v))}
              formatter={(v) => format(Number(v))}
              contentStyle={{ background: colors.bg, borderColor: colors.grid, color: colors.text }}
            />
            <Legend />
            {peers.map((peer, i) => (
              <Line
                key={peer}
                name={peer}
                data={history[peer]}
                dataKey={measure}
                stroke={colors.series(i)}
                strokeWidth={2}
                dot={{ r: 2, fill: colors.series(i) }}
                isAnimationActive={false}
              />
            ))}
          </LineChart>
        </ResponsiveContainer>
      </div>
      {/* Hidden by a box, not on the table: a table grows to its content, past a phone's edge. */}
      <div className="visually-hidden">
        <table>
          <caption>{title}: samples per peer</caption>
          <thead>
            <tr>
              <th scope="col">Peer</th>
              <th scope="col">Samples</th>
              <th scope="col">Now</th>
              <th scope="col">Highest</th>
            </tr>
          </thead>
          <tbody>
            {peers.map((peer) => {
              const samples = history[peer] ?? [];
              const values = samples.map((s) => s[measure]);
              return (
                <tr key={peer}>
                  <th scope="row">{peer}</th>
                  <td>{samples.length}</td>
                  <td>{values.length > 0 ? format(values.at(-1)!) : '—'}</td>
                  <td>{values.length > 0 ? format(Math.max(...values)) : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

/** Recharts draws each word of a label as a text span of its own: no-break spaces keep one label one span. */
function unbroken(text: string): string {
  return text.replace(/ /g, '\u00a0');
}

export interface BarDatum {
  label: string;
  value: number;
}

export interface BarsProps {
  title: string;
  /** Drawn top to bottom in this order. */
  data: readonly BarDatum[];
  format?: (value: number) => string;
  /** A bar was clicked (a keyboard reaches the same action through the page's own buttons). */
  onSelect?: (label: string) => void;
  /** Hide the caption (the page's heading already names the chart). */
  captionHidden?: boolean;
  testId?: string;
}

/** Horizontal bars with their values written at their ends (facet counts, transfer progress). */
export function Bars({ title, data, format = String, onSelect, captionHidden, testId }: BarsProps) {
  const colors = useColors();
  const longest = Math.max(4, ...data.map((d) => d.label.length));
  return (
    <figure className="chart bars" data-testid={testId}>
      <figcaption className={captionHidden ? 'visually-hidden' : undefined}>{title}</figcaption>
      <div aria-hidden="true">
        <ResponsiveContainer width="100%" height={data.length * 26 + 8}>
          <BarChart
            data={[...data]}
            layout="vertical"
            margin={{ top: 4, right: 48, bottom: 4, left: 4 }}
            accessibilityLayer={false}
          >
            <XAxis type="number" hide domain={[0, 'dataMax']} />
            <YAxis
              type="category"
              dataKey="label"
              width={Math.min(18, longest) * 7 + 8}
              stroke={colors.muted}
              tick={{ fill: colors.text, fontSize: 12 }}
              tickFormatter={(v: string) => unbroken(v.length > 18 ? `${v.slice(0, 17)}…` : v)}
              tickLine={false}
              interval={0}
            />
            <Bar
              dataKey="value"
              fill={colors.series(0)}
              isAnimationActive={false}
              barSize={16}
              cursor={onSelect ? 'pointer' : undefined}
              onClick={
                onSelect ? (d: { payload?: BarDatum }) => d.payload && onSelect(d.payload.label) : undefined
              }
            >
              <LabelList
                dataKey="value"
                position="right"
                className="bar-value"
                fill={colors.text}
                fontSize={12}
                formatter={(v: unknown) => unbroken(format(Number(v)))}
              />
            </Bar>
          </BarChart>
        </ResponsiveContainer>
      </div>
      <div className="visually-hidden">
        <table>
          <caption>{title}</caption>
          <tbody>
            {data.map((d) => (
              <tr key={d.label}>
                <th scope="row">{d.label}</th>
                <td>{format(d.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
