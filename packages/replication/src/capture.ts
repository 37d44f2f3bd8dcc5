import type { Queryable } from './sql';

/**
 * Change capture itself is SQL: the `repl_capture()` trigger on every replicated table appends each
 * insert, update and delete to `repl_changes` (prisma/migrations, docs/replication.md). A write made
 * while the transaction's `tributary.origin` names a peer is that peer's: it is not captured, so it
 * is never sent on. The injector works for the origin whose changes it applies; an application's
 * rules switch back to this site for a write every site must receive, such as a conflict record.
 */
export async function setOrigin(client: Queryable, origin: string): Promise<void> {
  await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
}

/** Runs `write` as a change of this site (captured, so it replicates), then works for `origin` again. */
export async function asLocalChange<T>(
  client: Queryable,
  origin: string,
  write: () => Promise<T>,
): Promise<T> {
  await setOrigin(client, '');
  try {
    return await write();
  } finally {
    await setOrigin(client, origin);
  }
}
