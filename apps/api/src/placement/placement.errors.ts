import { ErrorCode } from '@tributary/shared';
import { DomainError } from '../common/domain-error';

/** 422 VALIDATION_FAILED with messages keyed by field, like the validation pipe's. */
export function invalidRule(details: Record<string, string[]>): DomainError {
  const summary = Object.entries(details)
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
    .join(', ');
  return new DomainError(ErrorCode.ValidationFailed, `invalid rule: ${summary}`, details);
}

/**
 * The one answer for a path that names no collection the caller may read, whether something is
 * there or not: it names only the path given, so it cannot tell the two apart.
 */
export function noCollection(path: string): DomainError {
  return new DomainError(ErrorCode.NotFound, `${path}: no such collection, or you may not read it`);
}

/** The same for a rule id: a rule on a collection the caller cannot read does not exist for them. */
export function noRule(id: string): DomainError {
  return new DomainError(ErrorCode.NotFound, `rule ${id}: no such rule, or you may not read its collection`);
}

/** The same for a subscription id. */
export function noSubscription(id: string): DomainError {
  return new DomainError(
    ErrorCode.NotFound,
    `subscription ${id}: no such subscription, or you may not read its collection`,
  );
}
