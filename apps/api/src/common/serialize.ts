/** Wire form of catalog values: ids as decimal strings, times as ISO 8601. */
export const idString = (id: bigint): string => id.toString();
export const iso = (d: Date): string => d.toISOString();
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

/** Hashes of passwords and token secrets never leave the catalog, not even to administrators. */
export function redactSecrets(row: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!row) return row;
  const copy = { ...row };
  for (const key of ['password_hash', 'secret_hash']) if (key in copy) copy[key] = '(redacted)';
  return copy;
}
