/** Shell-quotes one argument for a POSIX shell (single quotes, `'` written as `'\''`). */
export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * A ready-to-paste `curl` command that lists a collection with the new token: what a person runs
 * first to see the token work.
 */
export function curlExample(origin: string, secret: string, collection: string): string {
  const url = `${origin}/api/v1/namespace/children?path=${encodeURIComponent(collection)}`;
  return `curl -H ${shellQuote(`Authorization: Bearer ${secret}`)} ${shellQuote(url)}`;
}

/** The expiry to send for a date picked in a form (the end of that day, local time), or undefined. */
export function expiryFromDate(date: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return undefined;
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(y, m - 1, d, 23, 59, 59).toISOString();
}
