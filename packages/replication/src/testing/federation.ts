import type { ReplicatedApplication } from '../application';
import { ReplicationEngine } from '../engine';
import { MemoryTransport } from '../transport';
import { createCatalog, registerSite, type TestCatalog } from './catalogs';

export interface TestFederation {
  transport: MemoryTransport;
  sites: Record<string, { catalog: TestCatalog; engine: ReplicationEngine }>;
  /** Runs cycles at every site until nothing moves (or `max` rounds). */
  settle(max?: number): Promise<void>;
  digests(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Several catalogs with engines wired through one in-memory transport (no HTTP), each engine with
 * `application`'s tables and rules (`plainApplication` for the engine alone).
 */
export async function createFederation(
  siteIds: string[],
  application: ReplicatedApplication,
): Promise<TestFederation> {
  const transport = new MemoryTransport();
  const sites: TestFederation['sites'] = {};
  for (const [i, id] of siteIds.entries()) {
    const catalog = await createCatalog();
    await registerSite(catalog.db, id, i + 1);
    const engine = new ReplicationEngine({
      db: catalog.db,
      siteId: id,
      peers: siteIds.filter((p) => p !== id),
      transport,
      application,
    });
    transport.register(id, (batch) => engine.receive(batch.origin, batch));
    sites[id] = { catalog, engine };
  }
  const all = () => Object.values(sites);
  return {
    transport,
    sites,
    async settle(max = 6) {
      for (let round = 0; round < max; round++) {
        let moved = 0;
        for (const s of all()) {
          const r = await s.engine.runCycle();
          moved += r.injected.txs + r.extracted.txs + r.dispatched.reduce((n, d) => n + d.txs, 0);
        }
        if (moved === 0 && round > 0) {
          // A cycle can end with a change of its own (a delete marked settled): not quiet yet.
          const pending = await Promise.all(
            all().map((s) => s.catalog.db.query<{ n: string }>('SELECT count(*) AS n FROM repl_changes')),
          );
          if (pending.every((p) => Number(p.rows[0]?.n) === 0)) return;
        }
      }
    },
    async digests() {
      return Promise.all(all().map(async (s) => (await s.engine.digest()).digest));
    },
    async close() {
      for (const s of all()) await s.engine.stop();
      for (const s of all()) await s.catalog.drop();
    },
  };
}
