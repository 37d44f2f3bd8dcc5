import { useId, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { METADATA_VALUE_TYPES, type MetadataValueType, type TripleDto } from '@tributary/shared';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { ListTable, type ListColumn } from '../app/ListTable';
import { rememberAttributes, useAttributeNames } from '../search/attributes';

/** The triples of one object or collection: list, add, edit in place, remove. */
export function MetadataPanel({ path, canWrite }: { path: string; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const key = ['metadata', path];
  const triples = useQuery({
    queryKey: key,
    queryFn: async () => {
      const r = await api.metadata(path);
      rememberAttributes(r.triples.map((t) => t.attribute));
      return r;
    },
  });
  const invalidate = () => void queryClient.invalidateQueries({ queryKey: key });
  const add = useMutation({
    mutationFn: (t: TripleForm) => api.addMetadata(path, [toInput(t)]),
    onSuccess: invalidate,
  });
  const remove = useMutation({ mutationFn: (id: string) => api.removeTriple(id), onSuccess: invalidate });
  const [editing, setEditing] = useState<string | null>(null);
  const actionsColumn: ListColumn<TripleDto> = {
    id: 'actions',
    header: 'Actions',
    headerHidden: true,
    className: 'actions',
    cell: (t) => (
      <>
        <button type="button" onClick={() => setEditing(t.id)} aria-label={`Edit ${t.attribute}`}>
          Edit
        </button>
        <button
          type="button"
          onClick={() => remove.mutate(t.id)}
          aria-label={`Remove ${t.attribute} = ${String(t.value)}`}
        >
          Remove
        </button>
      </>
    ),
  };

  return (
    <section aria-labelledby="metadata-title" className="metadata-panel">
      <h3 id="metadata-title">Metadata</h3>
      <ErrorNote error={triples.error} />
      {triples.data && (
        <ListTable
          className="triples"
          rows={triples.data.triples}
          rowKey={(t) => t.id}
          rowProps={(t) => (editing === t.id ? {} : { 'data-testid': 'triple' })}
          spanningRow={(t) =>
            editing === t.id && <EditTriple triple={t} onDone={() => setEditing(null)} onSaved={invalidate} />
          }
          empty="No metadata yet."
          columns={[
            { id: 'attribute', header: 'Attribute', cell: (t) => t.attribute },
            {
              id: 'value',
              header: 'Value',
              cell: (t) => (
                <>
                  {String(t.value)}
                  {t.unit ? ` ${t.unit}` : ''}{' '}
                  {t.type !== 'text' && <span className="muted small">({t.type})</span>}
                </>
              ),
            },
            ...(canWrite ? [actionsColumn] : []),
          ]}
        />
      )}
      <ErrorNote error={remove.error} />
      {canWrite && (
        <TripleFormView
          submitLabel="Add"
          legend="Add a triple"
          busy={add.isPending}
          error={add.error}
          onSubmit={(t, reset) => add.mutate(t, { onSuccess: reset })}
        />
      )}
    </section>
  );
}

export interface TripleForm {
  attribute: string;
  value: string;
  type: MetadataValueType;
  unit: string;
}

export function toInput(t: TripleForm) {
  const value = t.type === 'number' ? Number(t.value) : t.value;
  return {
    attribute: t.attribute.trim(),
    value,
    type: t.type,
    ...(t.unit.trim() ? { unit: t.unit.trim() } : {}),
  };
}

function EditTriple({
  triple,
  onDone,
  onSaved,
}: {
  triple: TripleDto;
  onDone: () => void;
  onSaved: () => void;
}) {
  const save = useMutation({
    mutationFn: (t: TripleForm) => {
      const input = toInput(t);
      return api.updateTriple(triple.id, { ...input, unit: input.unit ?? null });
    },
    onSuccess: () => {
      onSaved();
      onDone();
    },
  });
  return (
    <TripleFormView
      legend={`Edit ${triple.attribute}`}
      submitLabel="Save"
      initial={{
        attribute: triple.attribute,
        value: String(triple.value),
        type: triple.type,
        unit: triple.unit ?? '',
      }}
      busy={save.isPending}
      error={save.error}
      onSubmit={(t) => save.mutate(t)}
      onCancel={onDone}
    />
  );
}

/** Attribute (with suggestions), value, type and unit; used to add, edit and bulk-tag. */
export function TripleFormView({
  legend,
  submitLabel,
  initial,
  busy,
  error,
  onSubmit,
  onCancel,
}: {
  legend: string;
  submitLabel: string;
  initial?: TripleForm;
  busy: boolean;
  error: unknown;
  onSubmit: (t: TripleForm, reset: () => void) => void;
  onCancel?: () => void;
}) {
  const id = useId();
  const empty: TripleForm = { attribute: '', value: '', type: 'text', unit: '' };
  const [form, setForm] = useState<TripleForm>(initial ?? empty);
  const suggestions = useAttributeNames(true);
  const numberInvalid =
    form.type === 'number' && form.value.trim() !== '' && !Number.isFinite(Number(form.value));

  function submit(e: FormEvent) {
    e.preventDefault();
    if (busy || numberInvalid) return;
    onSubmit(form, () => setForm(empty));
  }

  return (
    <form onSubmit={submit} className="triple-form">
      <fieldset>
        <legend>{legend}</legend>
        <label htmlFor={`${id}-a`}>Attribute</label>
        <input
          id={`${id}-a`}
          list={`${id}-list`}
          required
          value={form.attribute}
          onChange={(e) => setForm({ ...form, attribute: e.target.value })}
        />
        <datalist id={`${id}-list`}>
          {suggestions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
        <label htmlFor={`${id}-v`}>Value</label>
        <input
          id={`${id}-v`}
          required
          value={form.value}
          aria-invalid={numberInvalid}
          aria-describedby={numberInvalid ? `${id}-verr` : undefined}
          onChange={(e) => setForm({ ...form, value: e.target.value })}
        />
        <label htmlFor={`${id}-t`}>Type</label>
        <select
          id={`${id}-t`}
          value={form.type}
          onChange={(e) => setForm({ ...form, type: e.target.value as MetadataValueType })}
        >
          {METADATA_VALUE_TYPES.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <label htmlFor={`${id}-u`}>Unit</label>
        <input
          id={`${id}-u`}
          value={form.unit}
          onChange={(e) => setForm({ ...form, unit: e.target.value })}
        />
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        {numberInvalid && (
          <span id={`${id}-verr`} role="alert" className="error">
            Not a number.
          </span>
        )}
      </fieldset>
      <ErrorNote error={error} />
    </form>
  );
}
