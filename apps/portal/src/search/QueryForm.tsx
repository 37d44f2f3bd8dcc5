import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useAttributeNames } from './attributes';
import { applyCompletion, complete, validateQuery, type Completion } from './queryAssist';

/**
 * The query box: the text form of a metadata query with completion (attributes, operators, `and`/`or`;
 * Tab or Enter accepts, arrows move, Escape closes) and the parser's complaint shown under the box
 * with a caret at the position, before anything is sent. `onRun` gets a query that parses.
 */
export function QueryForm({
  q,
  scope,
  kind,
  onRun,
}: {
  q: string;
  scope: string;
  kind: string;
  onRun: (next: { q: string; scope: string; kind: string }) => void;
}) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [text, setText] = useState(q);
  const [caret, setCaret] = useState(q.length);
  const [scopeText, setScopeText] = useState(scope);
  const [kindValue, setKindValue] = useState(kind);
  const [open, setOpen] = useState(false);
  const [highlight, setHighlight] = useState(0);
  const attributes = useAttributeNames(false);
  const problem = validateQuery(text);
  const completion: Completion = complete(text, caret, attributes);
  const showList = open && completion.options.length > 0;
  const [showProblem, setShowProblem] = useState(false);

  useEffect(() => setHighlight(0), [completion.from, completion.options.length]);

  function accept(option: string) {
    const next = applyCompletion(text, completion, option);
    setText(next.text);
    setCaret(next.caret);
    requestAnimationFrame(() => input.current?.setSelectionRange(next.caret, next.caret));
  }

  function onKey(e: KeyboardEvent<HTMLInputElement>) {
    if (!showList) {
      if (e.key === 'ArrowDown' || (e.key === ' ' && e.ctrlKey)) {
        e.preventDefault();
        setOpen(true);
      }
      return;
    }
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setHighlight((h) => (h + 1) % completion.options.length);
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setHighlight((h) => (h - 1 + completion.options.length) % completion.options.length);
    } else if (e.key === 'Tab' || (e.key === 'Enter' && open)) {
      e.preventDefault();
      accept(completion.options[highlight]!);
    } else if (e.key === 'Escape') {
      setOpen(false);
    }
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    setShowProblem(true);
    if (problem !== null) return;
    setOpen(false);
    onRun({ q: text.trim(), scope: scopeText.trim() || '/', kind: kindValue });
  }

  return (
    <form onSubmit={submit} className="query-form" role="search">
      <label htmlFor={`${id}-q`}>Query</label>
      <div className="combo">
        <input
          ref={input}
          id={`${id}-q`}
          className="query-input"
          role="combobox"
          aria-expanded={showList}
          aria-controls={`${id}-list`}
          aria-autocomplete="list"
          aria-activedescendant={showList ? `${id}-opt-${highlight}` : undefined}
          aria-invalid={showProblem && problem !== null}
          aria-describedby={`${id}-help ${id}-err`}
          autoComplete="off"
          spellCheck={false}
          placeholder="filetype = fits and size > 1e6"
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setCaret(e.target.selectionStart ?? e.target.value.length);
            setOpen(true);
            setShowProblem(false);
          }}
          onSelect={(e) => setCaret(e.currentTarget.selectionStart ?? text.length)}
          onKeyDown={onKey}
          onBlur={() => {
            setOpen(false);
            if (text.trim() !== '') setShowProblem(true);
          }}
        />
        {showList && (
          <ul id={`${id}-list`} role="listbox" className="suggestions" aria-label="Suggestions">
            {completion.options.map((o, i) => (
              <li
                key={o}
                id={`${id}-opt-${i}`}
                role="option"
                aria-selected={i === highlight}
                onMouseDown={(e) => {
                  e.preventDefault();
                  accept(o);
                }}
              >
                {o}
              </li>
            ))}
          </ul>
        )}
      </div>
      <button type="submit">Search</button>
      <p id={`${id}-help`} className="muted help">
        Conditions like <code>project = coast</code>, <code>size &gt; 1e6</code>,{' '}
        <code>name like &apos;run%&apos;</code>, joined with <code>and</code> / <code>or</code>. Tab completes
        attributes and operators.
      </p>
      <div id={`${id}-err`}>
        {showProblem && problem !== null && (
          <div role="alert" className="error-note query-problem">
            <span>
              {problem.message} (at character {problem.position + 1})
            </span>
            <pre aria-hidden="true">
              {text}
              {'\n'}
              {' '.repeat(problem.position)}^
            </pre>
          </div>
        )}
      </div>
      <div className="query-options">
        <label htmlFor={`${id}-scope`}>Within</label>
        <input id={`${id}-scope`} value={scopeText} onChange={(e) => setScopeText(e.target.value)} />
        <label htmlFor={`${id}-kind`}>Find</label>
        <select id={`${id}-kind`} value={kindValue} onChange={(e) => setKindValue(e.target.value)}>
          <option value="object">files</option>
          <option value="collection">folders</option>
        </select>
      </div>
    </form>
  );
}
