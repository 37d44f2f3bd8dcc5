/**
 * Row values as the catalog's replication rules compare them: rows arrive as JSON (from a peer's
 * change or `to_jsonb`), so ids may be numbers or text and times ISO text in any zone.
 */

/** A scalar JSON value (an id, a number) as text; anything else as its JSON. */
export function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  return JSON.stringify(value) ?? '';
}

export function nullableText(value: unknown): string | null {
  return value === null || value === undefined ? null : scalarText(value);
}

/** JSON text with object keys sorted: equal values give equal text whatever their key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Equal JSON values; times written in two zones (`+00:00`, `Z`) are the same time. */
export function sameValue(x: unknown, y: unknown): boolean {
  if (canonical(x ?? null) === canonical(y ?? null)) return true;
  if (typeof x !== 'string' || typeof y !== 'string' || !/^\d{4}-\d{2}-\d{2}[T ]/.test(x)) return false;
  const tx = Date.parse(x);
  return Number.isFinite(tx) && tx === Date.parse(y);
}

export function microsOf(timestamp: unknown): number {
  const ms = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  return Number.isFinite(ms) ? ms * 1000 : 0;
}

/** Orders two bigint ids given as numbers or text. */
export function idOrder(a: unknown, b: unknown): number {
  const x = BigInt(scalarText(a));
  const y = BigInt(scalarText(b));
  return x === y ? 0 : x > y ? 1 : -1;
}
