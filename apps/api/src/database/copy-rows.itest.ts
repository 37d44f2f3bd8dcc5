import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminConnection } from '@tributary/testkit';
import { copyRows, type CopyValue } from './copy-rows';

describe('copyRows (real PostgreSQL)', () => {
  let db: pg.Client;
  beforeAll(async () => {
    db = new pg.Client(adminConnection());
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
  });

  const table = `CREATE TEMP TABLE copied (id bigint NOT NULL, label text, amount float8 CHECK (amount >= 0))`;

  it('inserts every row, across many chunks, with the values as sent', async () => {
    await db.query('BEGIN');
    try {
      await db.query(table);
      const odd = ['C:\\data', '\\N', '\\.', 'tab\there', 'line\nbreak', 'cr\rhere', 'Zürich ✓', ''];
      const rows: CopyValue[][] = Array.from({ length: 5000 }, (_, i) => [
        281474976710656n + BigInt(i),
        i % 10 === 9 ? null : odd[i % odd.length]!,
        i % 7 === 0 ? null : i / 4,
      ]);
      expect(await copyRows(db, 'copied', ['id', 'label', 'amount'], rows)).toBe(5000);
      const { rows: back } = await db.query<{ id: string; label: string | null; amount: number | null }>(
        'SELECT id, label, amount FROM copied ORDER BY id',
      );
      expect(back.map((r) => [BigInt(r.id), r.label, r.amount])).toEqual(rows);
    } finally {
      await db.query('ROLLBACK');
    }
  });

  it("rejects with the server's error when a row is refused after the first chunks, and the connection goes on", async () => {
    await db.query('BEGIN');
    let failure: unknown;
    try {
      await db.query(table);
      const rows: CopyValue[][] = Array.from({ length: 6000 }, (_, i) => [i, 'x', i === 4500 ? -1 : 1]);
      await copyRows(db, 'copied', ['id', 'label', 'amount'], rows).catch((err: unknown) => {
        failure = err;
      });
    } finally {
      await db.query('ROLLBACK');
    }
    expect(failure).toBeInstanceOf(Error);
    expect((failure as pg.DatabaseError).code).toBe('23514'); // check_violation
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('ends the COPY when the rows cannot be produced, writing nothing', async () => {
    await db.query('BEGIN');
    let failure: unknown;
    try {
      await db.query(table);
      function* rows(): Generator<CopyValue[]> {
        for (let i = 0; i < 3000; i++) yield [i, 'x', 1];
        throw new Error('the source failed');
      }
      await copyRows(db, 'copied', ['id', 'label', 'amount'], rows()).catch((err: unknown) => {
        failure = err;
      });
    } finally {
      await db.query('ROLLBACK');
    }
    expect((failure as Error).message).toContain('the source failed');
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});
