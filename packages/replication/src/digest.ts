import type { Db } from './types';

export interface CatalogDigest {
  /** One hash over every replicated table: equal at two sites means equal catalogs. */
  digest: string;
  rows: number;
  tables: Record<string, { rows: number; digest: string }>;
}

/**
 * The catalog digest (repl_digest in the migrations): per replicated table, an MD5 over the rows'
 * MD5s in key order, without local-only columns; so it does not depend on physical row order or on
 * what is local to a site.
 */
export async function catalogDigest(db: Db): Promise<CatalogDigest> {
  const res = await db.query<{ tbl: string; rows: string; digest: string }>('SELECT * FROM repl_digest()');
  const result: CatalogDigest = { digest: '', rows: 0, tables: {} };
  for (const row of res.rows) {
    if (row.tbl === '*') {
      result.digest = row.digest;
      result.rows = Number(row.rows);
    } else {
      result.tables[row.tbl] = { rows: Number(row.rows), digest: row.digest };
    }
  }
  return result;
}
