import { ErrorCode, errorStatus } from '@tributary/shared';

/**
 * A failure the caller can act on. Services throw these; the exception filter turns them into
 * `{ error: { code, message, details } }` with the status that goes with the code.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, string[]>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  get status(): number {
    return errorStatus[this.code];
  }
}

export const notFound = (what: string): DomainError =>
  new DomainError(ErrorCode.NotFound, `${what} does not exist`);
