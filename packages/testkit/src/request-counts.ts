/** Requests a site served, per `<method> <route> <status>`: how many, and their seconds together. */
export type RequestCounts = Map<string, { count: number; seconds: number }>;

/**
 * The site's request histogram (`tributary_http_request_duration_seconds`) from its /metrics text:
 * what the mount's tests and `bench:mount` count requests with.
 */
export function parseRequestCounts(text: string): RequestCounts {
  const counts: RequestCounts = new Map();
  const line = /^tributary_http_request_duration_seconds_(count|sum)\{([^}]*)\} (\S+)$/;
  for (const row of text.split('\n')) {
    const m = line.exec(row);
    if (!m) continue;
    const labels = new Map([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!] as const));
    const key = `${labels.get('method')} ${labels.get('route')} ${labels.get('status')}`;
    const entry = counts.get(key) ?? { count: 0, seconds: 0 };
    if (m[1] === 'count') entry.count = Number(m[3]);
    else entry.seconds = Number(m[3]);
    counts.set(key, entry);
  }
  return counts;
}
