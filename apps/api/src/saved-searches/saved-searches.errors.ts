import { ErrorCode, MAX_SAVED_SEARCHES } from '@tributary/shared';
import { DomainError, notFound } from '../common/domain-error';

/** Someone else's saved search answers the same as a missing one, so ids reveal nothing. */
export const savedSearchNotFound = (id: bigint): DomainError => notFound(`saved search ${id}`);

export const savedSearchNameTaken = (name: string): DomainError =>
  new DomainError(ErrorCode.NameTaken, `you already have a saved search named "${name}"`, {
    name: ['is already used by another of your saved searches'],
  });

export const tooManySavedSearches = (): DomainError =>
  new DomainError(ErrorCode.ValidationFailed, `at most ${MAX_SAVED_SEARCHES} saved searches per user`, {
    name: [`you have ${MAX_SAVED_SEARCHES} saved searches already; delete one first`],
  });

export const invalidSavedSearchCursor = (): DomainError =>
  new DomainError(
    ErrorCode.InvalidCursor,
    'the cursor is not one this listing returned; start again without it',
  );
