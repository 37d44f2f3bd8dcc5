import { describe, expect, it } from 'vitest';
import { withBatchDataText } from './outgoing-queue';
import type { LoggedChange } from './types';

describe('withBatchDataText', () => {
  const row: LoggedChange = { t: 'users', o: 'I', k: '7', d: { id: 7 }, s: 1, b: null, bs: null };
  const stored = {
    t: 'metadata_triples',
    o: 'B',
    k: 'id',
    d: null,
    s: 2,
    b: null,
    bs: null,
    x: '41',
  } as const;
  const data = { id: [1, 2], attribute: ['a', 'b'] };

  it('puts each batch its data back, by change id, and leaves other changes as they are', () => {
    const out = JSON.parse(
      withBatchDataText([row, stored], new Map([['41', JSON.stringify(data)]])),
    ) as LoggedChange[];
    expect(out).toEqual([row, { t: 'metadata_triples', o: 'B', k: 'id', d: data, s: 2, b: null, bs: null }]);
    expect(out[1]).not.toHaveProperty('x');
  });

  it('splices the data in as PostgreSQL wrote it (spaces and all), without parsing it', () => {
    const text = '{"id": [1, 2], "attribute": ["a", "b"]}';
    const out = withBatchDataText([stored], new Map([['41', text]]));
    expect(out).toContain(`"d":${text}}`);
    expect((JSON.parse(out) as LoggedChange[])[0]!.d).toEqual(data);
  });

  it('refuses a batch whose data is missing rather than sending it empty', () => {
    expect(() => withBatchDataText([stored], new Map())).toThrow(/change 41 is missing/);
  });
});
