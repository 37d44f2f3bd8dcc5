/**
 * The search box's logic, pure so it is unit-tested: inline validation with the shared parser
 * (packages/shared metadata-query, the same one the API runs) and completion of attributes,
 * operators and connectives at the caret.
 */
import { parseQueryText, QuerySyntaxError } from '@tributary/shared';

export interface QueryProblem {
  message: string;
  /** 0-based offset of the offending part. */
  position: number;
}

/** `null` when the text parses (or is empty: everything matches), else the reason and where. */
export function validateQuery(text: string): QueryProblem | null {
  if (text.trim() === '') return null;
  try {
    parseQueryText(text);
    return null;
  } catch (err) {
    if (err instanceof QuerySyntaxError) return { message: err.reason, position: err.position };
    return { message: err instanceof Error ? err.message : 'invalid query', position: 0 };
  }
}

export const OPERATORS = [
  '=',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'between',
  'in',
  'like',
  'prefix',
  'exists',
] as const;
const CONNECTIVES = ['and', 'or'] as const;
const WORD = /[A-Za-z0-9_.:+\-/]/;

type Expect =
  'attribute' | 'operator' | 'value' | 'connective' | 'between-and' | 'in-open' | 'in-value' | 'in-next';

interface Tok {
  text: string;
  kind: 'word' | 'string' | 'op' | 'punct';
}

/** A forgiving tokenizer for what is typed so far (an unterminated string is just a string). */
function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === "'" || ch === '"') {
      let j = i + 1;
      while (j < src.length && !(src[j] === ch && src[j + 1] !== ch)) j += src[j] === ch ? 2 : 1;
      out.push({ text: src.slice(i, j + 1), kind: 'string' });
      i = j + 1;
    } else if ('(),'.includes(ch)) {
      out.push({ text: ch, kind: 'punct' });
      i++;
    } else if ('<>!='.includes(ch)) {
      const two = src.slice(i, i + 2);
      const op = ['<=', '>=', '!=', '<>'].includes(two) ? two : ch;
      out.push({ text: op, kind: 'op' });
      i += op.length;
    } else if (WORD.test(ch)) {
      let j = i;
      while (j < src.length && WORD.test(src[j]!)) j++;
      out.push({ text: src.slice(i, j), kind: 'word' });
      i = j;
    } else {
      i++;
    }
  }
  return out;
}

/** What the grammar expects after these complete tokens. */
export function expectAfter(src: string): Expect {
  let state: Expect | 'between-first' = 'attribute';
  for (const t of lex(src)) {
    const w = t.kind === 'word' ? t.text.toLowerCase() : t.text;
    switch (state) {
      case 'attribute':
        if (t.text !== '(') state = 'operator';
        break;
      case 'operator':
        state =
          w === 'exists'
            ? 'connective'
            : w === 'in'
              ? 'in-open'
              : w === 'between'
                ? 'between-first'
                : 'value';
        break;
      case 'between-first':
        state = 'between-and';
        break;
      case 'between-and':
        state = w === 'and' ? 'value' : 'connective';
        break;
      case 'value':
        state = 'connective';
        break;
      case 'in-open':
        state = t.text === '(' ? 'in-value' : 'connective';
        break;
      case 'in-value':
        state = 'in-next';
        break;
      case 'in-next':
        state = t.text === ',' ? 'in-value' : 'connective';
        break;
      case 'connective':
        if (w === 'and' || w === 'or') state = 'attribute';
        break;
    }
  }
  return state === 'between-first' ? 'value' : state;
}

export interface Completion {
  /** Replace text[from, to) with the chosen option. */
  from: number;
  to: number;
  options: string[];
  expects: Expect;
}

/** Options for the word at the caret (or for what comes next after a space). */
export function complete(text: string, caret: number, attributes: readonly string[], max = 8): Completion {
  let from = caret;
  while (from > 0 && WORD.test(text[from - 1]!)) from--;
  // Partial operators (`<`, `!`) are completed as operators too.
  let opFrom = caret;
  while (opFrom > 0 && '<>!='.includes(text[opFrom - 1]!)) opFrom--;
  if (opFrom < caret) from = opFrom;
  const partial = text.slice(from, caret);
  const expects = expectAfter(text.slice(0, from));
  const lower = partial.toLowerCase();
  let pool: readonly string[] = [];
  if (expects === 'attribute') pool = attributes;
  else if (expects === 'operator') pool = OPERATORS;
  else if (expects === 'connective') pool = CONNECTIVES;
  else if (expects === 'between-and') pool = ['and'];
  const options = pool
    .filter((o) => o.toLowerCase().startsWith(lower) && o.toLowerCase() !== lower)
    .slice(0, max);
  return { from, to: caret, options, expects };
}

/** Applies a completion: the option replaces the partial word, followed by one space. */
export function applyCompletion(
  text: string,
  c: Completion,
  option: string,
): { text: string; caret: number } {
  const before = text.slice(0, c.from);
  const after = text.slice(c.to).replace(/^\s*/, '');
  const inserted = `${option} `;
  return { text: before + inserted + after, caret: before.length + inserted.length };
}

/** A value as it must be written in the text form (quoted unless it is a plain word or number). */
export function quoteValue(value: string | number): string {
  if (typeof value === 'number') return String(value);
  if (
    /^[A-Za-z_][A-Za-z0-9_.:+\-/]*$/.test(value) &&
    !['and', 'or', 'between', 'in', 'like', 'prefix', 'exists'].includes(value.toLowerCase()) &&
    !/^\d/.test(value)
  )
    return value;
  return `'${value.replaceAll("'", "''")}'`;
}

/** The query narrowed by one facet value: `(q) and attr = value`. */
export function narrow(q: string, attribute: string, value: string | number): string {
  const cond = `${attribute} = ${quoteValue(value)}`;
  if (q.trim() === '') return cond;
  return /\bor\b/i.test(q) ? `(${q.trim()}) and ${cond}` : `${q.trim()} and ${cond}`;
}
