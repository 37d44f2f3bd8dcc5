import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import {
  prng,
  sleep,
  startFederation,
  startWan,
  testBytes,
  wanProfile,
  type Federation,
  type FederationSite,
  type Wan,
  type WanLink,
} from '@tributary/testkit';

/**
 * Replication across a faulty wide-area network: three real site processes (1 s cycle) whose every
 * peer link goes through Toxiproxy (packages/testkit/src/wan.ts), while every site keeps writing.
 * Round by round a fault is put on links: cut (refused), blackholed (silent), slowed (round trip and
 * jitter), throttled (bandwidth), reset mid-batch (RST after some milliseconds), and lifted again.
 * Afterwards: equal digests, nothing lost (every object and collection written is at every site,
 * once), no change applied twice (per origin, the transactions each peer archived are exactly those
 * the origin logged during the run) and empty queues.
 *
 * The CI sample runs every kind of fault once on randomly chosen links. `WAN_FAULT_ROUNDS=<n>` runs
 * n random rounds instead (a long run), `WAN_FAULT_SEED=<seed>` replays a run's choices,
 * `WAN_FAULT_PROFILE` sets the links' profile under the faults (default regional; docs/wan.md).
 */

const IDS = ['lsu', 'tulane', 'uno'] as const;
type SiteId = (typeof IDS)[number];
const FAULTS = ['cut', 'blackhole', 'slow', 'limit', 'reset'] as const;
type Fault = (typeof FAULTS)[number];

const SEED = process.env.WAN_FAULT_SEED ? Number(process.env.WAN_FAULT_SEED) : randomInt(2 ** 31);
const ROUNDS = process.env.WAN_FAULT_ROUNDS ? Number(process.env.WAN_FAULT_ROUNDS) : FAULTS.length;
const PROFILE = wanProfile(process.env.WAN_FAULT_PROFILE ?? 'regional');
/** How long each fault stays on before it is lifted. */
const ROUND_MS = 2500;
/** How much longer a fault stays on when the sites have not yet met it. */
const FAULT_EVIDENCE_MS = 30_000;
/** Objects each site uploads per batch, and batches per round. */
const PER_BATCH = 25;

describe('replication across a faulty WAN', () => {
  let wan: Wan;
  let fed: Federation;
  const links = new Map<string, WanLink>();

  beforeAll(async () => {
    wan = await startWan({ profile: PROFILE, seed: SEED });
    fed = await startFederation({
      ids: [...IDS],
      cycleSeconds: 1,
      // The mover and the scrub would add replicated writes of their own; this test counts writes.
      env: { PLACEMENT_ENABLED: 'false', SCRUB_RATE_MIBS: '0' },
      peerUrl: async (from, to, url) => {
        const link = await wan.link(`${from}-${to}`, url);
        links.set(`${from}-${to}`, link);
        return link.url;
      },
    });
  }, 180_000);

  afterAll(async () => {
    await fed?.close();
    await wan?.close();
  }, 60_000);

  it('every site keeps writing through cuts, blackholes, slow and throttled links and resets; all converge, nothing lost or applied twice', async () => {
    onTestFailed(() => console.error(`WAN_FAULT_SEED=${SEED}\n${fed.outputs(6000)}`));
    const dice = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(dice() * items.length)] as T;
    const site = (id: SiteId): FederationSite => fed.site(id);
    const run = `wan-${SEED}`;

    // Every site has its own subtree, and all write into one shared collection (names never clash).
    await site('lsu').client.createCollection(`/projects/${run}`);
    await fed.waitForConvergence(60_000);
    const logStart = new Map<SiteId, number>();
    for (const id of IDS) {
      logStart.set(
        id,
        Number((await site(id).query<{ s: string }>('SELECT last_seq AS s FROM repl_local')).rows[0]?.s),
      );
      await site(id).client.createCollection(`/projects/${run}/${id}`);
    }

    /** Written and acknowledged by a site: must be everywhere at the end. */
    const objects = new Map<string, { bytes: number; seed: number }>();
    const collections = new Set<string>();
    let writing = true;
    const writeErrors: string[] = [];

    // Writers: each site uploads batches and makes collections in its subtree and the shared one,
    // as fast as it answers, for the whole run. Every write is local: the WAN never blocks it.
    const writers = IDS.map(async (id, s) => {
      let batch = 0;
      while (writing) {
        const dir = `/projects/${run}/${id}/b${batch}`;
        try {
          await site(id).client.createCollection(dir);
          collections.add(dir);
          const files = Array.from({ length: PER_BATCH }, (_, i) => {
            const seed = (s + 1) * 1_000_000 + batch * 1000 + i;
            return { name: `f${i}.bin`, seed, body: new Blob([testBytes(200 + (seed % 300), seed)]) };
          });
          const made = await site(id).client.uploadMany(dir, files);
          expect(made).toHaveLength(PER_BATCH);
          for (const f of files) objects.set(`${dir}/${f.name}`, { bytes: f.body.size, seed: f.seed });
          const shared = `/projects/${run}/${id}-${batch}`;
          await site(id).client.createCollection(shared);
          collections.add(shared);
        } catch (err) {
          writeErrors.push(`${id} batch ${batch}: ${err instanceof Error ? err.message : String(err)}`);
        }
        batch++;
        await sleep(100);
      }
    });

    /** Between two sites, both ways: when each last recorded a failed exchange, and what waits. */
    const exchanges = async (a: SiteId, b: SiteId): Promise<{ errors: string; backlog: number }> => {
      let errors = '';
      let backlog = 0;
      for (const [x, y] of [
        [a, b],
        [b, a],
      ] as const) {
        const peer = await site(x).query<{ at: string | null; n: string }>(
          `SELECT (SELECT last_error_at::text FROM repl_peers WHERE peer_id = $1) AS at,
                  (SELECT count(*) FROM repl_outgoing WHERE peer_id = $1) AS n`,
          [y],
        );
        errors += `${x}->${y}:${peer.rows[0]?.at ?? '-'} `;
        backlog += Number(peer.rows[0]?.n ?? 0);
      }
      return { errors, backlog };
    };

    // Faults: the CI sample runs each kind once (shuffled), a long run picks at random.
    const plan: Fault[] =
      ROUNDS === FAULTS.length
        ? [...FAULTS].sort(() => dice() - 0.5)
        : Array.from({ length: ROUNDS }, () => pick(FAULTS));
    const applied: string[] = [];
    for (const fault of plan) {
      const from = pick(IDS);
      const to = pick(IDS.filter((x) => x !== from));
      // Both directions of a pair: a cable cut takes both.
      const pair = [links.get(`${from}-${to}`)!, links.get(`${to}-${from}`)!];
      switch (fault) {
        case 'cut':
          await Promise.all(pair.map((l) => l.cut()));
          break;
        case 'blackhole':
          await Promise.all(pair.map((l) => l.blackhole()));
          break;
        case 'slow':
          await Promise.all(pair.map((l) => l.slow(200 + Math.floor(dice() * 300), 50)));
          break;
        case 'limit':
          await Promise.all(pair.map((l) => l.limit(20 + Math.floor(dice() * 80))));
          break;
        case 'reset': {
          // Mid-batch: connections open now and new ones are reset a few milliseconds into their data.
          const after = Math.floor(dice() * 50);
          await Promise.all(pair.map((l) => l.resetPeers(after)));
          break;
        }
      }
      applied.push(`${fault} ${from}<->${to}`);
      const before = await exchanges(from, to);
      // The fault must bite: a cut or a reset fails an exchange, a blackhole holds changes back.
      // It stays on for the round, and longer if the sites (slow on a busy machine) have not yet
      // tried the link: up to FAULT_EVIDENCE_MS more.
      const bitten = (now: { errors: string; backlog: number }): boolean =>
        fault === 'cut' || fault === 'reset'
          ? now.errors !== before.errors
          : fault === 'blackhole'
            ? now.backlog > 0
            : true;
      await sleep(ROUND_MS);
      let during = await exchanges(from, to);
      const deadline = Date.now() + FAULT_EVIDENCE_MS;
      while (!bitten(during) && Date.now() < deadline) {
        await sleep(250);
        during = await exchanges(from, to);
      }
      await Promise.all(pair.map((l) => l.clearFaults()));
      expect(
        bitten(during),
        `${fault} ${from}<->${to} left no trace: ${JSON.stringify({ before, during })}`,
      ).toBe(true);
      await sleep(300);
    }
    writing = false;
    await Promise.all(writers);
    expect(writeErrors, `writes that failed (faults: ${applied.join(', ')})`).toEqual([]);
    expect(objects.size).toBeGreaterThan(0);

    // Healed: every site converges, with empty queues (waitForConvergence checks the backlogs).
    const digest = await fed.waitForConvergence(150_000);
    expect(digest.digest).toMatch(/\S/);

    // Nothing lost, nothing twice: every object and collection at every site, once, the right size.
    for (const id of IDS) {
      for (const dir of collections) {
        if (!/\/b\d+$/.test(dir)) continue;
        const page = await site(id).client.listChildren({ path: dir, limit: 1000 });
        expect(page.total, `${dir} at ${id}`).toBe(PER_BATCH);
        const names = page.items.map((e) => e.name);
        expect(new Set(names).size).toBe(PER_BATCH);
      }
      const shared = await site(id).client.listChildren({ path: `/projects/${run}`, limit: 1000 });
      const sharedNames = shared.items.map((e) => e.name);
      expect(new Set(sharedNames).size, `children of /projects/${run} at ${id}`).toBe(sharedNames.length);
      const expectedShared = [...collections].filter((c) => !/\/b\d+$/.test(c)).length + IDS.length;
      expect(sharedNames.length).toBe(expectedShared);
    }
    // A sample of bytes read at each site (from wherever they are held).
    const sample = [...objects.entries()].filter((_, i) => i % 97 === 0);
    for (const id of IDS) {
      for (const [path, o] of sample) {
        const res = await site(id).client.download(path);
        const bytes = Buffer.from(await res.arrayBuffer());
        expect(bytes.equals(testBytes(o.bytes, o.seed)), `${path} read at ${id}`).toBe(true);
      }
    }

    // Per origin: what every peer archived during the run is exactly what the origin logged, and
    // nothing waits in any queue.
    for (const origin of IDS) {
      const logged = await site(origin).query<{ seq: string }>(
        'SELECT seq FROM repl_log WHERE seq > $1 ORDER BY seq',
        [logStart.get(origin)],
      );
      const want = logged.rows.map((r) => r.seq);
      expect(want.length, `transactions logged at ${origin}`).toBeGreaterThan(0);
      for (const peer of IDS.filter((x) => x !== origin)) {
        const archived = await site(peer).query<{ seq: string }>(
          'SELECT seq FROM repl_archive WHERE origin = $1 AND seq > $2 ORDER BY seq',
          [origin, logStart.get(origin)],
        );
        expect(
          archived.rows.map((r) => r.seq),
          `${origin}'s transactions archived at ${peer}`,
        ).toEqual(want);
        const queued = await site(origin).query<{ n: string }>(
          'SELECT count(*) AS n FROM repl_outgoing WHERE peer_id = $1',
          [peer],
        );
        expect(Number(queued.rows[0]?.n), `${origin}'s queue for ${peer}`).toBe(0);
      }
      const incoming = await site(origin).query<{ n: string }>('SELECT count(*) AS n FROM repl_incoming');
      expect(Number(incoming.rows[0]?.n), `incoming at ${origin}`).toBe(0);
    }
  }, 420_000);
});
