/**
 * The side-by-side comparison of a conflict's versions, pure so it is unit-tested: one row per
 * field, the fields that differ first, values formatted for reading.
 */
import type { ConflictDto, ConflictVersionDto } from '@tributary/shared';

export interface DiffRow {
  field: string;
  /** One display value per version, in `versions` order. */
  values: string[];
  /** The versions disagree on this field. */
  differs: boolean;
}

/** Internal bookkeeping fields that mean nothing to people. */
const HIDDEN = new Set(['id', 'version', 'stamp', 'origin_site', 'originSite', 'row_version']);

export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (typeof value === 'string') return value === '' ? '""' : value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return JSON.stringify(value);
}

function versionState(v: ConflictVersionDto): string | null {
  if (v.deleted) return 'deleted';
  if (v.trashed) return 'in the trash';
  return null;
}

/** Rows for every field any version has; differing fields first (in `changedFields` order), then the rest by name. */
export function conflictDiff(conflict: Pick<ConflictDto, 'versions' | 'changedFields'>): DiffRow[] {
  const fields = new Set<string>();
  for (const v of conflict.versions) for (const k of Object.keys(v.values ?? {})) fields.add(k);
  const rows: DiffRow[] = [];
  for (const field of fields) {
    if (HIDDEN.has(field)) continue;
    const values = conflict.versions.map((v) =>
      v.values === null ? (versionState(v) ?? '—') : formatValue(v.values[field]),
    );
    const differs = conflict.changedFields.includes(field) || new Set(values).size > 1;
    rows.push({ field, values, differs });
  }
  const order = (r: DiffRow) => {
    const i = conflict.changedFields.indexOf(r.field);
    return r.differs ? (i === -1 ? conflict.changedFields.length : i) : Number.MAX_SAFE_INTEGER;
  };
  return rows.sort((a, b) => order(a) - order(b) || a.field.localeCompare(b.field));
}

/** The version that stands now: the decided one when known, else the provisional winner. */
export function provisionalWinner(conflict: Pick<ConflictDto, 'versions'>): ConflictVersionDto | undefined {
  return conflict.versions.find((v) => v.provisionalWinner);
}

/** Time left until the deadline, for people: `23 h 10 min left`, `past the deadline`. */
export function deadlineText(deadline: string, now: Date): string {
  const ms = Date.parse(deadline) - now.getTime();
  if (!Number.isFinite(ms)) return deadline;
  if (ms <= 0) return 'past the deadline';
  const min = Math.floor(ms / 60_000);
  if (min < 60) return `${min} min left`;
  return `${Math.floor(min / 60)} h ${min % 60} min left`;
}

/** The merged record a `merge` decision sends: for each field, the value of the version picked for it. */
export function mergeValue(
  conflict: Pick<ConflictDto, 'versions'>,
  picks: Record<string, number>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, index] of Object.entries(picks)) {
    const v = conflict.versions.find((x) => x.index === index);
    if (v?.values && field in v.values) out[field] = v.values[field];
  }
  return out;
}

/** Sites that have a version in any of these conflicts (for "prefer site" in bulk decisions). */
export function sitesOf(conflicts: Array<Pick<ConflictDto, 'versions'>>): string[] {
  return [...new Set(conflicts.flatMap((c) => c.versions.map((v) => v.site)))].sort();
}
