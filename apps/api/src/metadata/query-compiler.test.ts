import { checkCondition, parseQueryText } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { ConditionCompiler, SqlParams } from './query-compiler';

function compile(q: string): { sql: string; values: unknown[] } {
  const params = new SqlParams();
  const sql = new ConditionCompiler(params, 'object_id').predicate(checkCondition(parseQueryText(q)), 'e.id');
  return { sql, values: params.values };
}

describe('ConditionCompiler', () => {
  it('turns a conjunction into one EXISTS per condition, each on its typed index', () => {
    const { sql, values } = compile('filetype = fits and size between 1e6 and 5e6 and d > 2020-01-01');
    expect(sql.match(/EXISTS/g)).toHaveLength(3);
    expect(sql).toContain("t1.value_type = 'text' AND t1.attribute = $1 AND t1.value = $2");
    expect(sql).toContain(
      't2.num IS NOT NULL AND t2.attribute = $3 AND t2.num BETWEEN $4::float8 AND $5::float8',
    );
    expect(sql).toContain('t3.time IS NOT NULL AND t3.attribute = $6 AND t3.time > $7::timestamptz');
    expect(values).toEqual(['filetype', 'fits', 'size', 1e6, 5e6, 'd', '2020-01-01T00:00:00.000Z']);
  });

  it("answers two or more text equalities of a conjunction together from the objects' terms", () => {
    const { sql, values } = compile("filetype = fits and project = coast-017 and name like 'obj%'");
    expect(sql).toMatch(
      /^\(e\.id IN \(SELECT x1\.object_id FROM metadata_terms x1 WHERE x1\.terms @> ARRAY\[metadata_term\(\$1, \$2\), metadata_term\(\$3, \$4\)\]\) AND EXISTS /,
    );
    // Only the pattern is left, as a probe per candidate (OFFSET 0: not turned into a join).
    expect(sql.match(/EXISTS/g)).toHaveLength(1);
    // A probe of one object reads its triples of the attribute, not the pattern's range of values.
    expect(sql).toMatch(/\(t\d+\.value \|\| ''\) LIKE \$6\) OFFSET 0\)\)$/);
    expect(values).toEqual(['filetype', 'fits', 'project', 'coast-017', 'name', 'obj%']);
  });

  it('in probe mode makes every condition a probe of the one entry, ranges off the value indexes', () => {
    const params = new SqlParams();
    const sql = new ConditionCompiler(params, 'object_id', true).predicate(
      checkCondition(
        parseQueryText("(kind = half or level between 1 and 9) and kind != rare and run prefix 'r0'"),
      ),
      'w.id',
    );
    // No semi-join over the matches (no IN), every EXISTS kept as a probe (OFFSET 0).
    expect(sql).not.toContain(' IN (');
    expect(sql.match(/EXISTS/g)).toHaveLength(5);
    expect(sql.match(/OFFSET 0/g)).toHaveLength(5);
    expect(sql).toContain(' OR ');
    // An equality keeps its exact index descent; a range and a pattern go through (object_id, attribute).
    expect(sql).toContain('t1.value = $2');
    expect(sql).toContain('(t2.num + 0) BETWEEN $4::float8 AND $5::float8');
    expect(sql).toMatch(/\(t\d+\.value \|\| ''\) LIKE \$\d+/);
  });

  it('says when the terms drive a condition on objects: one text equality, or two or more in a conjunction', () => {
    const driven = (q: string, column: 'object_id' | 'collection_id' = 'object_id') =>
      new ConditionCompiler(new SqlParams(), column).termsDriven(checkCondition(parseQueryText(q)), 'x');
    expect(driven("creator = 'user-0042'")).toEqual({
      onTerms: 'x.terms @> ARRAY[metadata_term($1, $2)]',
      rest: [],
    });
    const both = driven("filetype = fits and project = coast-017 and size > 1e9 and name like 'obj%'");
    expect(both?.onTerms).toMatch(
      /^x\.terms @> ARRAY\[metadata_term\(\$1, \$2\), metadata_term\(\$3, \$4\)\] AND EXISTS/,
    );
    // The range is on the terms row; only the pattern is left for each object.
    expect(both?.rest).toEqual([expect.objectContaining({ attribute: 'name', op: 'like' })]);
    // One equality beside other conditions, a number, a disjunction, collections: the planner chooses.
    expect(driven("filetype = fits and name like 'obj%'")).toBeNull();
    expect(driven('size = 5')).toBeNull();
    expect(driven('a = x or b = y')).toBeNull();
    expect(driven('a = x', 'collection_id')).toBeNull();
  });

  it("checks a conjunction's number and time comparisons on the same terms row (its measures)", () => {
    const { sql, values } = compile(
      'filetype = fits and project = coast-017 and size between 1e9 and 5e9 and d >= 2020-01-01 and r in (1, 2)',
    );
    expect(sql).not.toContain('metadata_triples');
    expect(sql).toContain(
      "EXISTS (SELECT 1 FROM unnest(x1.measure_keys, x1.measures) AS m2(k, v) WHERE m2.k = metadata_measure_key('number', $5) AND m2.v BETWEEN $6::float8 AND $7::float8)",
    );
    expect(sql).toContain(
      "m3.k = metadata_measure_key('time', $8) AND m3.v >= metadata_time_measure($9::timestamptz)",
    );
    expect(sql).toContain("m4.k = metadata_measure_key('number', $10) AND m4.v = ANY($11::float8[])");
    expect(values.slice(4)).toEqual(['size', 1e9, 5e9, 'd', '2020-01-01T00:00:00.000Z', 'r', [1, 2]]);
    // A comparison the measures cannot answer stays a probe of the triples.
    expect(compile('a = x and b = y and size != 3').sql).toContain('metadata_triples');
    expect(compile("a = x and b = y and r in (1, 'two')").sql).toContain('metadata_triples');
  });

  it('leaves terms out for one equality, numbers, collections and disjunctions', () => {
    expect(compile('filetype = fits and size > 1e9').sql).not.toContain('metadata_terms');
    expect(compile('size = 5 and resolution = 300').sql).not.toContain('metadata_terms');
    expect(compile('a = x or b = y').sql).not.toContain('metadata_terms');
    const params = new SqlParams();
    const onCollections = new ConditionCompiler(params, 'collection_id').predicate(
      checkCondition(parseQueryText('a = x and b = y')),
      'e.id',
    );
    expect(onCollections).not.toContain('metadata_terms');
  });

  it('turns a disjunction into a semi-join on a UNION ALL of id sets', () => {
    const { sql } = compile('a = 1 or (b = x and c exists)');
    expect(sql.startsWith('e.id IN (')).toBe(true);
    expect(sql).toContain('UNION ALL');
    expect(sql).toMatch(/SELECT x\d+\.id FROM \(SELECT t\d+\.object_id FROM metadata_triples/);
  });

  it('reads != as "has the attribute, and no value equal"', () => {
    const { sql } = compile('project != hurricane');
    expect(sql).toContain(
      'EXISTS (SELECT 1 FROM metadata_triples t1 WHERE t1.object_id = e.id AND ((t1.value_type',
    );
    expect(sql).toContain('AND NOT EXISTS (SELECT 1 FROM metadata_triples t2');
  });

  it('passes every value as a parameter, never in the SQL text', () => {
    const { sql, values } = compile(`name like 'x''; drop table users; --%' and n in (1, 'two')`);
    expect(sql).not.toContain('drop');
    expect(values).toContain("x'; drop table users; --%");
    expect(values).toContainEqual([1]);
    expect(values).toContainEqual(['two']);
  });
});
