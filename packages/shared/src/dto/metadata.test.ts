import { describe, expect, it } from 'vitest';
import { BulkMetadataSchema } from './metadata';

describe('bulk columns (a table of triples)', () => {
  const paths = ['/p/a', '/p/b', '/p/c'];

  it('reads each value as the column type, keeps nulls, and takes the unit once for the column', () => {
    const parsed = BulkMetadataSchema.parse({
      operations: [
        {
          paths,
          columns: [
            { attribute: 'size', unit: 'bytes', values: [1, null, '2e3'] },
            { attribute: 'seen', type: 'time', values: ['2024-05-01', null, '2024-05-01T12:00:00+02:00'] },
          ],
        },
      ],
    });
    const [size, seen] = parsed.operations[0]!.columns;
    expect(size).toEqual({
      attribute: 'size',
      unit: 'bytes',
      values: [{ type: 'number', text: '1', num: 1 }, null, { type: 'text', text: '2e3' }],
    });
    expect(seen!.values.map((v) => v?.time ?? null)).toEqual([
      '2024-05-01T00:00:00.000Z',
      null,
      '2024-05-01T10:00:00.000Z',
    ]);
  });

  it('names each bad value (at most ten per column) and a column of the wrong length', () => {
    const bad = BulkMetadataSchema.safeParse({
      operations: [
        {
          paths: Array.from({ length: 12 }, (_, i) => `/p/${i}`),
          columns: [{ attribute: 'n', type: 'number', values: Array(12).fill('x') }],
        },
      ],
    });
    expect(bad.success).toBe(false);
    const where = bad.error!.issues.map((i) => i.path.join('.'));
    expect(where).toEqual(Array.from({ length: 10 }, (_, i) => `operations.0.columns.0.values.${i}`));

    const short = BulkMetadataSchema.safeParse({
      operations: [{ paths, columns: [{ attribute: 'n', values: [1, 2] }] }],
    });
    expect(short.error!.issues).toEqual([
      expect.objectContaining({
        path: ['operations', 0, 'columns', 0, 'values'],
        message: 'has 2 values for 3 paths: give one per path (null for none)',
      }),
    ]);
    const notValue = BulkMetadataSchema.safeParse({
      operations: [{ paths, columns: [{ attribute: 'n', values: [1, { a: 1 }, true] }] }],
    });
    expect(notValue.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['operations.0.columns.0.values.1', 'must be a string, a number or null'],
      ['operations.0.columns.0.values.2', 'must be a string, a number or null'],
    ]);
    const under = BulkMetadataSchema.safeParse({
      operations: [{ under: '/p', columns: [{ attribute: 'n', values: [] }] }],
    });
    expect(under.error!.issues.map((i) => i.message)).toContain('columns need "paths" (one value per path)');
  });
});
