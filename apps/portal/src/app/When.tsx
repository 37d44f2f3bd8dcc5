import { formatDateTime, relativeTime } from '../format';

/**
 * A time for people: in the reader's locale (or relative to now, `5 minutes ago`), the exact time on
 * hover, and machine-readable (`<time dateTime>`), which the screenshot tests mask.
 */
export function When({ iso, relative = false }: { iso: string; relative?: boolean }) {
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {relative ? relativeTime(iso, new Date()) : formatDateTime(iso)}
    </time>
  );
}
