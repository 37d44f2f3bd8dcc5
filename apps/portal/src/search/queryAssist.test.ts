import { describe, expect, it } from 'vitest';
import { applyCompletion, complete, expectAfter, narrow, quoteValue, validateQuery } from './queryAssist';

const attrs = ['filetype', 'project', 'size', 'dateOfCreation'];

describe('validateQuery', () => {
  it('accepts valid and empty queries', () => {
    expect(validateQuery('')).toBeNull();
    expect(validateQuery("filetype = fits and size > 1e6 and project like 'coast%'")).toBeNull();
    expect(validateQuery('size between 1 and 5 and project in (a, b) and resolution exists')).toBeNull();
  });

  it('points at the offending position', () => {
    const p = validateQuery('filetype = fits and size >');
    expect(p?.position).toBe(26);
    expect(p?.message).toMatch(/expected a value/);
    expect(validateQuery("name = 'open")?.message).toMatch(/unterminated/);
  });
});

describe('expectAfter', () => {
  it('follows the grammar', () => {
    expect(expectAfter('')).toBe('attribute');
    expect(expectAfter('size ')).toBe('operator');
    expect(expectAfter('size > ')).toBe('value');
    expect(expectAfter('size > 3 ')).toBe('connective');
    expect(expectAfter('size > 3 and ')).toBe('attribute');
    expect(expectAfter('( ')).toBe('attribute');
    expect(expectAfter('size between 1 ')).toBe('between-and');
    expect(expectAfter('size between 1 and ')).toBe('value');
    expect(expectAfter('size between 1 and 2 ')).toBe('connective');
    expect(expectAfter('p in (a, ')).toBe('in-value');
    expect(expectAfter('p in (a, b) ')).toBe('connective');
    expect(expectAfter('r exists ')).toBe('connective');
    expect(expectAfter("name = 'a b' ")).toBe('connective');
  });
});

describe('complete', () => {
  it('completes attributes at the start and after connectives', () => {
    expect(complete('pro', 3, attrs).options).toEqual(['project']);
    expect(complete('size > 1 and f', 14, attrs)).toMatchObject({ from: 13, options: ['filetype'] });
    expect(complete('', 0, attrs).options).toEqual(attrs);
  });

  it('completes operators and connectives', () => {
    expect(complete('size ', 5, attrs).options).toContain('between');
    expect(complete('size b', 6, attrs).options).toEqual(['between']);
    expect(complete('size <', 6, attrs).options).toEqual(['<=']);
    expect(complete('size > 1 ', 9, attrs).options).toEqual(['and', 'or']);
    expect(complete('size between 1 ', 15, attrs).options).toEqual(['and']);
  });

  it('offers nothing for values', () => {
    expect(complete('size > ', 7, attrs).options).toEqual([]);
  });

  it('applies a completion and moves the caret after it', () => {
    const c = complete('size > 1 and proj', 17, attrs);
    expect(applyCompletion('size > 1 and proj', c, 'project')).toEqual({
      text: 'size > 1 and project ',
      caret: 21,
    });
  });
});

describe('narrow and quoteValue', () => {
  it('quotes what is not a plain word', () => {
    expect(quoteValue('fits')).toBe('fits');
    expect(quoteValue(42)).toBe('42');
    expect(quoteValue("O'Brien lab")).toBe("'O''Brien lab'");
    expect(quoteValue('and')).toBe("'and'");
    expect(quoteValue('2024-01-01')).toBe("'2024-01-01'");
  });

  it('adds a facet condition, bracketing disjunctions', () => {
    expect(narrow('', 'project', 'coast')).toBe('project = coast');
    expect(narrow('size > 1', 'project', 'coast')).toBe('size > 1 and project = coast');
    expect(narrow('a = 1 or b = 2', 'project', 'coast')).toBe('(a = 1 or b = 2) and project = coast');
    expect(validateQuery(narrow('a = 1 or b = 2', 'p', 'x y'))).toBeNull();
  });
});
