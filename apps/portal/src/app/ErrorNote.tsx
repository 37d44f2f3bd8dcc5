import type { ReactNode } from 'react';
import { ApiError, errorMessage } from '../api';

/**
 * The one way an error is shown: next to what caused it, as an alert, with the API's message and,
 * for validation errors, the messages per field.
 */
export function ErrorNote({ error, children }: { error: unknown; children?: ReactNode }) {
  if (error === null || error === undefined) return null;
  const details = error instanceof ApiError ? error.details : undefined;
  const lines = details
    ? Object.entries(details).flatMap(([field, messages]) =>
        Array.isArray(messages) ? messages.map((m) => `${field}: ${m}`) : [],
      )
    : [];
  return (
    <div role="alert" className="error-note">
      <span>{errorMessage(error)}</span>
      {lines.length > 0 && (
        <ul>
          {lines.map((l) => (
            <li key={l}>{l}</li>
          ))}
        </ul>
      )}
      {children}
    </div>
  );
}
