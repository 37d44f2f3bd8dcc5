import {
  checkCondition,
  ConditionError,
  ErrorCode,
  parseQueryText,
  QuerySyntaxError,
  type Condition,
} from '@tributary/shared';
import { DomainError } from '../common/domain-error';

/**
 * A request's metadata condition, from the text form (`q`) or the JSON form (`where`). Errors are
 * `422 INVALID_QUERY` naming the field and, for text, the position (`details.position`), so a form
 * can point at the bad part. Used by metadata search and by saved searches (which store text).
 */
export function parseCondition(input: { where?: unknown; q?: string }, field = 'q'): Condition | null {
  try {
    if (input.q !== undefined) return checkCondition(parseQueryText(input.q), field);
    if (input.where !== undefined && input.where !== null) return checkCondition(input.where, 'where');
    return null;
  } catch (err) {
    if (err instanceof QuerySyntaxError) {
      throw new DomainError(ErrorCode.InvalidQuery, `invalid query: ${err.message}`, {
        [field]: [`${err.reason} at position ${err.position + 1}`],
        position: [String(err.position)],
      });
    }
    if (err instanceof ConditionError) {
      throw new DomainError(ErrorCode.InvalidQuery, `invalid query: ${err.at}: ${err.message}`, {
        [err.at]: [err.message],
      });
    }
    throw err;
  }
}
