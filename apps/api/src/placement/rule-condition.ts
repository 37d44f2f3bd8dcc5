import type { Logger } from '@nestjs/common';
import { checkCondition, parseQueryText } from '@tributary/shared';
import type { SqlPool } from '../database/sql-pool';
import { ConditionCompiler, SqlParams } from '../metadata/query-compiler';

/**
 * A placement rule's metadata condition as an SQL predicate on the object `id` (an SQL expression),
 * its values added to `params`: 'TRUE' when it has none, null (logged) when it no longer parses, so
 * the rule covers nothing rather than everything. The movers of copies, shards and resources share it.
 */
export function ruleConditionSql(
  rule: { id: string | bigint; condition: string | null },
  params: SqlParams,
  id: string,
  logger: Logger,
): string | null {
  if (!rule.condition) return 'TRUE';
  try {
    const condition = checkCondition(parseQueryText(rule.condition), 'condition');
    return new ConditionCompiler(params, 'object_id').predicate(condition, id);
  } catch (err) {
    logger.warn(
      `rule ${rule.id}: its condition does not parse (${(err as Error).message}); it covers nothing`,
    );
    return null;
  }
}

/** Those of `rules` whose condition object `objectId` meets (in order), one query per conditional rule. */
export async function rulesMetBy<R extends { id: string | bigint; condition: string | null }>(
  sql: SqlPool,
  rules: readonly R[],
  objectId: string,
  logger: Logger,
): Promise<R[]> {
  const met: R[] = [];
  for (const rule of rules) {
    if (rule.condition === null) {
      met.push(rule);
      continue;
    }
    const params = new SqlParams();
    const id = params.add(objectId, '::bigint');
    const where = ruleConditionSql(rule, params, id, logger);
    if (where === null) continue;
    const res = await sql.pool.query<{ ok: boolean }>(`SELECT ${where} AS ok`, params.values);
    if (res.rows[0]?.ok) met.push(rule);
  }
  return met;
}
