/** Wire form of catalog values: ids as decimal strings, times as ISO 8601. */
export const idString = (id: bigint): string => id.toString();
export const iso = (d: Date): string => d.toISOString();
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
