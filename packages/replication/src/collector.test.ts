import { describe, expect, it } from 'vitest';
import { BatchRejectedError, Collector, unfold } from './collector';
import {
  rowCount,
  type Batch,
  type BatchColumns,
  type BatchInsert,
  type BatchUpdate,
  type Change,
  type Db,
} from './types';

interface Call {
  text: string;
  values: unknown[];
}

/**
 * A stand-in for the catalog pool: records every query and answers the incoming queue's `have` and
 * what this site reports applied (`applied`, with its own log position `through`).
 */
class FakeDb {
  readonly calls: Call[] = [];
  have = '0';
  applied = '0';
  through = '0';

  query(
    text: string,
    values: unknown[] = [],
  ): Promise<{ rows: Array<{ have: string } | { applied: string; through: string }>; rowCount: number }> {
    this.calls.push({ text, values });
    if (text.startsWith('SELECT reported_applied_seq')) {
      return Promise.resolve({ rows: [{ applied: this.applied, through: this.through }], rowCount: 1 });
    }
    return Promise.resolve({ rows: [{ have: this.have }], rowCount: 1 });
  }

  connect(): Promise<never> {
    return Promise.reject(new Error('the collector must not open a transaction'));
  }

  asDb(): Db {
    return this as unknown as Db;
  }
}

function change(overrides: Partial<Change> = {}): Change {
  return {
    t: 'users',
    o: 'I',
    k: '281474976710657',
    d: { id: '281474976710657', username: 'ada' },
    s: 1_763_000_000_000_001,
    b: null,
    bs: null,
    ...overrides,
  };
}

function batch(txs: Batch['txs'], origin = 'lsu'): Batch {
  return { origin, txs };
}

/** Builds a batch from untyped JSON, as the HTTP collector receives it. */
function wire(value: unknown): Batch {
  return value as Batch;
}

async function expectRefused(collector: Collector, db: FakeDb, peer: string, b: Batch, message: RegExp) {
  const result = collector.receive(peer, b);
  await expect(result).rejects.toBeInstanceOf(BatchRejectedError);
  await expect(result).rejects.toThrow(message);
  expect(db.calls).toEqual([]);
}

describe('Collector', () => {
  it('stores a valid batch in the incoming queue and answers what it has', async () => {
    const db = new FakeDb();
    db.have = '2';
    db.applied = '1';
    db.through = '5';
    const collector = new Collector(db.asDb());
    const b = batch([
      { seq: 1, changes: [change()] },
      { seq: 2, changes: [change({ o: 'U', b: 1, bs: 'lsu' }), change({ o: 'D', t: 'memberships' })] },
    ]);
    const ack = await collector.receive('lsu', b);
    expect(ack).toEqual({ have: 2, applied: 1, through: 5 });
    const stored = db.calls.find((c) => c.text.includes('INSERT INTO repl_incoming'));
    expect(stored).toBeDefined();
    expect(stored!.values[0]).toBe('lsu');
    expect(JSON.parse(stored!.values[1] as string)).toEqual(b.txs);
  });

  it('an empty batch is valid (it asks what the peer has) and still queries', async () => {
    const db = new FakeDb();
    db.have = '7';
    const ack = await new Collector(db.asDb()).receive('tulane', batch([], 'tulane'));
    expect(ack).toEqual({ have: 7, applied: 0, through: 0 });
    expect(db.calls.length).toBeGreaterThan(0);
  });

  it('accepts seqs with gaps as long as they increase', async () => {
    const db = new FakeDb();
    await new Collector(db.asDb()).receive(
      'lsu',
      batch([
        { seq: 3, changes: [change()] },
        { seq: 9, changes: [change()] },
      ]),
    );
    expect(db.calls.length).toBeGreaterThan(0);
  });

  it("refuses a batch carrying another origin's changes", async () => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'tulane',
      batch([{ seq: 1, changes: [change()] }], 'lsu'),
      /peer tulane sent changes of origin lsu/,
    );
  });

  it('refuses an origin mismatch even for an empty batch', async () => {
    const db = new FakeDb();
    await expectRefused(new Collector(db.asDb()), db, 'tulane', batch([], 'uno'), /origin uno/);
  });

  it('refuses txs that are not an array', async () => {
    const db = new FakeDb();
    await expectRefused(new Collector(db.asDb()), db, 'lsu', wire({ origin: 'lsu', txs: {} }), /array/);
  });

  it.each([
    ['repeated', [1, 1]],
    ['decreasing', [2, 1]],
    ['zero', [0]],
    ['negative', [-1]],
    ['fractional', [1.5]],
    ['unsafe', [2 ** 53]],
  ])('refuses %s seqs', async (_name, seqs) => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      batch(seqs.map((seq) => ({ seq, changes: [change()] }))),
      /increasing positive integer seq/,
    );
  });

  it('refuses a string seq from the wire', async () => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      wire({ origin: 'lsu', txs: [{ seq: '1', changes: [change()] }] }),
      /seq/,
    );
  });

  it('refuses a transaction with no changes, even after a valid one', async () => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      batch([
        { seq: 1, changes: [change()] },
        { seq: 2, changes: [] },
      ]),
      /transaction 2 has no changes/,
    );
  });

  it('refuses a transaction whose changes are not an array', async () => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      wire({ origin: 'lsu', txs: [{ seq: 1, changes: 'nope' }] }),
      /no changes/,
    );
  });

  it.each([
    ['a null transaction', null],
    ['a string transaction', 'tx'],
  ])('refuses %s as a rejected batch, storing nothing', async (_name, bad) => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      wire({ origin: 'lsu', txs: [{ seq: 1, changes: [change()] }, bad] }),
      /./,
    );
  });

  const malformed: Array<[string, unknown]> = [
    ['a bad op', { ...change(), o: 'X' }],
    ['a lower-case op', { ...change(), o: 'i' }],
    ['a fractional stamp', { ...change(), s: 1.5 }],
    ['a string stamp', { ...change(), s: '1763000000000001' }],
    ['an unsafe stamp', { ...change(), s: 2 ** 60 }],
    ['a missing stamp', { ...change(), s: undefined }],
    ['a numeric key', { ...change(), k: 42 }],
    ['a missing table', { ...change(), t: undefined }],
    ['null data', { ...change(), d: null }],
    ['string data', { ...change(), d: 'row' }],
    ['a null change', null],
    ['a string change', 'I users 1'],
  ];

  it.each(malformed)('refuses %s, storing nothing of the batch', async (_name, bad) => {
    const db = new FakeDb();
    await expectRefused(
      new Collector(db.asDb()),
      db,
      'lsu',
      wire({
        origin: 'lsu',
        txs: [
          { seq: 1, changes: [change()] },
          { seq: 2, changes: [change(), bad] },
        ],
      }),
      /transaction 2 has a malformed change/,
    );
  });

  describe('batches of inserts', () => {
    const batchInsert = (d: BatchColumns, k = 'id'): BatchInsert => ({
      t: 'metadata_triples',
      o: 'B',
      k,
      d,
      s: 1_763_000_000_000_007,
      b: null,
      bs: null,
    });

    it('stores a batch as the per-row inserts it stands for, in order, between the other changes', async () => {
      const db = new FakeDb();
      db.have = '1';
      const collector = new Collector(db.asDb());
      const rows = batchInsert({
        id: [281474976710700, 281474976710701],
        object_id: [281474976710650, 281474976710651],
        attribute: ['project', 'size'],
        num: [null, 1e6],
      });
      const before = change();
      const after = change({ o: 'U', b: 1, bs: 'lsu' });
      expect(rowCount(rows)).toBe(2);
      await collector.receive('lsu', batch([{ seq: 1, changes: [before, rows, after] }]));
      const stored = db.calls.find((c) => c.text.includes('INSERT INTO repl_incoming'))!;
      expect(JSON.parse(stored.values[1] as string)).toEqual([
        {
          seq: 1,
          changes: [
            before,
            {
              t: 'metadata_triples',
              o: 'I',
              k: '281474976710700',
              d: { id: 281474976710700, object_id: 281474976710650, attribute: 'project', num: null },
              s: 1_763_000_000_000_007,
              b: null,
              bs: null,
            },
            {
              t: 'metadata_triples',
              o: 'I',
              k: '281474976710701',
              d: { id: 281474976710701, object_id: 281474976710651, attribute: 'size', num: 1e6 },
              s: 1_763_000_000_000_007,
              b: null,
              bs: null,
            },
            after,
          ],
        },
      ]);
    });

    it('unfolds a batch of updates into per-row updates, each with its own stamp and base', () => {
      const updates: BatchUpdate = {
        t: 'metadata_triples',
        o: 'V',
        k: 'id',
        d: {
          rows: { id: [281474976710700, 281474976710701], value: ['a', 'b'] },
          s: [1_763_000_000_000_010, 1_763_000_000_000_011],
          b: [1_763_000_000_000_001, null],
          bs: ['lsu', null],
        },
        s: 1_763_000_000_000_011,
        b: null,
        bs: null,
      };
      expect(rowCount(updates)).toBe(2);
      expect(unfold([updates])).toEqual([
        {
          t: 'metadata_triples',
          o: 'U',
          k: '281474976710700',
          d: { id: 281474976710700, value: 'a' },
          s: 1_763_000_000_000_010,
          b: 1_763_000_000_000_001,
          bs: 'lsu',
        },
        {
          t: 'metadata_triples',
          o: 'U',
          k: '281474976710701',
          d: { id: 281474976710701, value: 'b' },
          s: 1_763_000_000_000_011,
          b: null,
          bs: null,
        },
      ]);
    });

    it('gives every row the value of a column written once for the whole batch', () => {
      const at = '2026-11-25T13:45:01.123+00:00';
      const inserts = batchInsert({
        id: [281474976710700, 281474976710701],
        attribute: ['project', 'size'],
        collection_id: { '=': null },
        created_at: { '=': at },
      });
      const updates: BatchUpdate = {
        t: 'metadata_triples',
        o: 'V',
        k: 'id',
        d: { rows: { id: [7, 8], updated_by: { '=': 3 } }, s: [10, 11], b: [null, null], bs: [null, null] },
        s: 11,
        b: null,
        bs: null,
      };
      expect(rowCount(inserts)).toBe(2);
      expect(rowCount(updates)).toBe(2);
      expect(unfold([inserts, updates]).map((c) => c.d)).toEqual([
        { id: 281474976710700, attribute: 'project', collection_id: null, created_at: at },
        { id: 281474976710701, attribute: 'size', collection_id: null, created_at: at },
        { id: 7, updated_by: 3 },
        { id: 8, updated_by: 3 },
      ]);
    });

    it('leaves transactions without batches as they are', () => {
      const changes = [change(), change({ o: 'D' })];
      expect(unfold(changes)).toBe(changes);
    });

    it.each([
      ['columns of different lengths', batchInsert({ id: [1, 2], attribute: ['a'] })],
      ['no key column', batchInsert({ attribute: ['a'] })],
      ['no rows', batchInsert({ id: [] })],
      ['a key that is not an id', batchInsert({ id: [{ x: 1 }] })],
      ['a column that is not an array', batchInsert({ id: [1], attribute: 'a' as unknown as unknown[] })],
      ['a key written once for all rows', batchInsert({ id: { '=': 1 }, attribute: ['a'] })],
      [
        'a column written once with other fields',
        batchInsert({ id: [1], attribute: { '=': 'a', x: 1 } as unknown as BatchColumns[string] }),
      ],
      [
        'updates with fewer stamps than rows',
        {
          ...batchInsert({}),
          o: 'V',
          d: { rows: { id: [1, 2] }, s: [5], b: [null, null], bs: [null, null] },
        },
      ],
      [
        'updates with a base that is not a stamp',
        { ...batchInsert({}), o: 'V', d: { rows: { id: [1] }, s: [5], b: ['x'], bs: [null] } },
      ],
      ['updates without rows', { ...batchInsert({}), o: 'V', d: { s: [], b: [], bs: [] } }],
    ])('refuses a batch with %s, storing nothing', async (_, bad) => {
      const db = new FakeDb();
      await expectRefused(
        new Collector(db.asDb()),
        db,
        'lsu',
        wire({ origin: 'lsu', txs: [{ seq: 1, changes: [bad] }] }),
        /malformed change/,
      );
    });
  });
});
