import type { Federation, FederationSite } from '@tributary/testkit';
import { useFederation } from './federation';
import { expectStatus } from './test-site';

export interface TwoSites {
  lsu: FederationSite;
  tulane: FederationSite;
}

/**
 * Two real site processes, `lsu` (the founder) and `tulane`, with an hour-long cycle: each test makes
 * its changes, then calls `exchange` and checks both sites. Call it in a `describe`: it starts the
 * sites before the suite (handing them to `startedSites`), closes them after it, and prints every
 * site's output when a test fails (useFederation).
 */
export function useTwoSites(startedSites: (sites: TwoSites) => void): { exchange: () => Promise<void> } {
  let fed: Federation | undefined;
  useFederation(
    { ids: ['lsu', 'tulane'], cycleSeconds: 3600 },
    (started) => {
      fed = started;
      startedSites({ lsu: fed.site('lsu'), tulane: fed.site('tulane') });
    },
    4000,
  );

  /** Runs cycles at both sites until their catalogs agree. */
  async function exchange(): Promise<void> {
    if (!fed) throw new Error('the sites have not started');
    for (let i = 0; i < 3; i++) {
      for (const id of ['lsu', 'tulane']) {
        expectStatus(await fed.site(id).http.post('/api/v1/replication/cycle'), 200);
      }
    }
    await fed.waitForConvergence(30_000);
  }

  return { exchange };
}
