import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkCondition,
  ConditionError,
  parseQueryText,
  QuerySyntaxError,
  typedValue,
} from './metadata-query';

function syntaxError(src: string): QuerySyntaxError {
  try {
    parseQueryText(src);
  } catch (err) {
    if (err instanceof QuerySyntaxError) return err;
    throw err;
  }
  throw new Error(`expected a syntax error for ${src}`);
}

describe('parseQueryText', () => {
  it('parses the example from the issue', () => {
    expect(parseQueryText("filetype = fits and size > 1e6 and project like 'coast%'")).toEqual({
      and: [
        { attribute: 'filetype', op: '=', value: 'fits' },
        { attribute: 'size', op: '>', value: 1_000_000 },
        { attribute: 'project', op: 'like', value: 'coast%' },
      ],
    });
  });

  it('reads numbers, dates, quoted and bare text', () => {
    expect(parseQueryText('a = -3.5')).toEqual({ attribute: 'a', op: '=', value: -3.5 });
    expect(parseQueryText("a = '42'")).toEqual({ attribute: 'a', op: '=', value: '42' });
    expect(parseQueryText('a = "it\'s"')).toEqual({ attribute: 'a', op: '=', value: "it's" });
    expect(parseQueryText("a = 'it''s'")).toEqual({ attribute: 'a', op: '=', value: "it's" });
    expect(parseQueryText('d >= 2024-05-01')).toEqual({
      attribute: 'd',
      op: '>=',
      value: '2024-05-01T00:00:00.000Z',
      type: 'time',
    });
    expect(parseQueryText('d < 2024-05-01T12:30:00+02:00')).toMatchObject({
      value: '2024-05-01T10:30:00.000Z',
    });
    expect(parseQueryText('loc = /home/alice')).toEqual({ attribute: 'loc', op: '=', value: '/home/alice' });
  });

  it('knows every operator', () => {
    for (const op of ['=', '!=', '<', '<=', '>', '>=']) {
      expect(parseQueryText(`x ${op} 1`)).toEqual({ attribute: 'x', op, value: 1 });
    }
    expect(parseQueryText('x <> 1')).toEqual({ attribute: 'x', op: '!=', value: 1 });
    expect(parseQueryText('x between 1 and 2')).toEqual({ attribute: 'x', op: 'between', value: [1, 2] });
    expect(parseQueryText('x BETWEEN 2020-01-01 AND 2021-01-01')).toEqual({
      attribute: 'x',
      op: 'between',
      value: ['2020-01-01T00:00:00.000Z', '2021-01-01T00:00:00.000Z'],
      type: 'time',
    });
    expect(parseQueryText("x in (a, 'b c', 3)")).toEqual({
      attribute: 'x',
      op: 'in',
      value: ['a', 'b c', 3],
    });
    expect(parseQueryText("x like 'a_%'")).toEqual({ attribute: 'x', op: 'like', value: 'a_%' });
    expect(parseQueryText('x prefix abc')).toEqual({ attribute: 'x', op: 'prefix', value: 'abc' });
    expect(parseQueryText('x exists')).toEqual({ attribute: 'x', op: 'exists' });
  });

  it('binds and tighter than or, and honours parentheses', () => {
    expect(parseQueryText('a = 1 or b = 2 and c = 3')).toEqual({
      or: [
        { attribute: 'a', op: '=', value: 1 },
        {
          and: [
            { attribute: 'b', op: '=', value: 2 },
            { attribute: 'c', op: '=', value: 3 },
          ],
        },
      ],
    });
    expect(parseQueryText('(a = 1 or b = 2) and c = 3')).toEqual({
      and: [
        {
          or: [
            { attribute: 'a', op: '=', value: 1 },
            { attribute: 'b', op: '=', value: 2 },
          ],
        },
        { attribute: 'c', op: '=', value: 3 },
      ],
    });
  });

  it.each([
    ['', 0, 'the query is empty'],
    ['size >', 6, 'expected a value, found the end of the query'],
    ['size > and', 7, 'expected a value'],
    ['filetype fits', 9, 'expected an operator'],
    ["project like 'coast", 13, 'unterminated string'],
    ['a = 1 b = 2', 6, 'expected "and", "or" or the end'],
    ['(a = 1', 6, 'expected ")" to close the "(" at position 1'],
    ['a = 1 and', 9, 'expected an attribute name'],
    ['a between 1 2', 12, 'expected "and" after the low end'],
    ['a between 1 and 2020-01-01', 16, 'both ends of between'],
    ['a between x and y', 10, 'between compares numbers or times'],
    ['a in 1, 2', 5, 'expected "(" after in'],
    ['a in (1 2)', 8, 'expected "," or ")"'],
    ['a = 1 ; drop table x', 6, 'unexpected character ";"'],
    ['and = 1', 0, 'expected an attribute name, found "and"'],
    ['a = 2024-13-45', 4, 'not a valid date'],
  ])('points at the offending part of %j', (src, position, reason) => {
    const err = syntaxError(src);
    expect(err.position).toBe(position);
    expect(err.reason).toContain(reason);
    expect(err.message).toContain(`at position ${position + 1}`);
    // The message shows the text with a caret under the offending position.
    expect(err.message.split('\n')[2]).toBe('  ' + ' '.repeat(position) + '^');
  });

  it('never throws anything but a syntax error, whatever the input', () => {
    const alphabet = fc.constantFrom(...'ab1 ()\'",=<>!.-:%_andorbetweeninlikeexists'.split(''));
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 40 }).map((a) => a.join('')),
        (src) => {
          try {
            checkCondition(parseQueryText(src));
          } catch (err) {
            expect(err instanceof QuerySyntaxError || err instanceof ConditionError).toBe(true);
            if (err instanceof QuerySyntaxError) {
              expect(err.position).toBeGreaterThanOrEqual(0);
              expect(err.position).toBeLessThanOrEqual(src.length);
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('checkCondition', () => {
  it('types values and turns prefix into an escaped like pattern', () => {
    expect(checkCondition({ attribute: 'p', op: 'prefix', value: '50%_off' })).toMatchObject({
      op: 'like',
      pattern: '50\\%\\_off%',
    });
    expect(checkCondition({ attribute: 's', op: '>', value: '1e3', type: 'number' })).toMatchObject({
      values: [{ type: 'number', num: 1000, text: '1000' }],
    });
  });

  it.each([
    [{ attribute: 'a b', op: '=', value: 1 }, 'where.attribute'],
    [{ attribute: 'a', op: '~', value: 1 }, 'where.op'],
    [{ attribute: 'a', op: '=', value: [1] }, 'where.value'],
    [{ attribute: 'a', op: 'exists', value: 1 }, 'where.value'],
    [{ attribute: 'a', op: 'between', value: [1, 'x'] }, 'where.value'],
    [{ attribute: 'a', op: 'in', value: [] }, 'where.value'],
    [{ attribute: 'a', op: '=', value: 'soon', type: 'time' }, 'where.value'],
    [{ and: [{ attribute: 'a', op: '=', value: 1 }, { or: [] }] }, 'where.and.1.or'],
    [{ and: [], or: [] }, 'where'],
    ['a = 1', 'where'],
  ])('refuses %j at %s', (json, at) => {
    try {
      checkCondition(json);
      throw new Error('expected a ConditionError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConditionError);
      expect((err as ConditionError).at).toBe(at);
    }
  });

  it('limits the number of conditions', () => {
    const many = { and: Array.from({ length: 65 }, (_, i) => ({ attribute: `a${i}`, op: 'exists' })) };
    expect(() => checkCondition(many)).toThrow(/at most 64/);
  });
});

describe('typedValue', () => {
  it('keeps numbers exact and times in UTC', () => {
    expect(typedValue(1e6)).toEqual({ type: 'number', text: '1000000', num: 1e6 });
    expect(typedValue('2024-02-29', 'time')).toEqual({
      type: 'time',
      text: '2024-02-29T00:00:00.000Z',
      time: '2024-02-29T00:00:00.000Z',
    });
    expect(() => typedValue('12abc', 'number')).toThrow(/not a finite number/);
    expect(() => typedValue('x'.repeat(513))).toThrow(/at most 512/);
  });
});
