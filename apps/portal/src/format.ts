/** Pure display helpers: no DOM, no fetch, so they are unit-tested on their own. */

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'] as const;

/**
 * A byte count for people: `0 B`, `512 B`, `1.5 KiB`, `23 MiB`. Binary units (1 KiB = 1024 B);
 * one decimal below 10 of a unit, none above. Negative or non-finite input gives `—`.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  let rounded = value < 10 ? Math.round(value * 10) / 10 : Math.round(value);
  // 1023.97 KiB rounds to 1024 KiB: show it as 1 MiB instead.
  if (rounded >= 1024 && unit < BYTE_UNITS.length - 1) {
    rounded = 1;
    unit++;
  }
  return `${rounded} ${BYTE_UNITS[unit]}`;
}

export interface Crumb {
  /** What to show: the segment name, or `/` for the root. */
  label: string;
  /** The absolute path this crumb leads to. */
  path: string;
}

/**
 * The breadcrumb trail for an absolute path, root first:
 * `/home/alice` → `/` (/), `home` (/home), `alice` (/home/alice).
 * Empty segments (`//`, a trailing `/`) are skipped.
 */
export function breadcrumbs(path: string): Crumb[] {
  const crumbs: Crumb[] = [{ label: '/', path: '/' }];
  let current = '';
  for (const segment of path.split('/')) {
    if (segment === '') continue;
    current += `/${segment}`;
    crumbs.push({ label: segment, path: current });
  }
  return crumbs;
}

/**
 * A path taken from the address bar, tidied (`/a//b/` → `/a/b`), or `null` when there is none or
 * it is not absolute. The API does the real validation; this only keeps junk out of the URL.
 */
export function pathFromQuery(value: string | null): string | null {
  if (value === null || !value.startsWith('/')) return null;
  return breadcrumbs(value).at(-1)?.path ?? '/';
}

/**
 * The portal URL of a collection: `/browse/home/alice` (each segment encoded, slashes kept), so a
 * folder is a link one can share. The root is `/browse/`.
 */
export function browseHref(path: string): string {
  const segments = path.split('/').filter((s) => s !== '');
  return `/browse/${segments.map(encodeURIComponent).join('/')}`;
}

/** The path a `/browse/*` URL names, from the router's (decoded) splat: `home/alice` → `/home/alice`. */
export function pathFromSplat(splat: string | undefined): string {
  return pathFromQuery(`/${splat ?? ''}`) ?? '/';
}

/** The collection holding a path (`/a/b` → `/a`, `/a` → `/`). */
export function parentPath(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

/** The last segment of a path (`/a/b.csv` → `b.csv`; `/` → `/`). */
export function baseName(path: string): string {
  return path === '/' ? '/' : path.slice(path.lastIndexOf('/') + 1);
}

/** A duration in seconds for people: `0 s`, `42 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** An ISO timestamp in the reader's locale and time zone; unparseable input is shown as given. */
export function formatDateTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** A time relative to now, for people: `5 minutes ago`, `yesterday`, `in 3 hours`. */
export function relativeTime(iso: string, now: Date): string {
  const ms = Date.parse(iso) - now.getTime();
  if (!Number.isFinite(ms)) return iso;
  const abs = Math.abs(ms);
  const steps: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ['second', 1000],
    ['minute', 60_000],
    ['hour', 3_600_000],
    ['day', 86_400_000],
  ];
  let unit: Intl.RelativeTimeFormatUnit = 'second';
  let size = 1000;
  for (const [u, s] of steps) if (abs >= s) [unit, size] = [u, s];
  return relative.format(Math.round(ms / size), unit);
}
