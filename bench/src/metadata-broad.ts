import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { localSite, type BenchSite } from './site';

/**
 * `npm run bench:metadata -- --shape broad` (issue 34, docs/metadata.md "Broad queries"): queries that
 * match much of the catalog, asked by three callers in three scopes, on values whose frequencies
 * follow a power law. Setup (not timed) is plain SQL on the site's catalog (triggers on, so the
 * derived tables are kept as a load through the API keeps them; change capture off).
 *
 * The catalog: `objects` objects in collections of 1,000 under /projects/broad/g0..g9 (collection j
 * in group j mod 10, so each group holds a tenth), except collection 1, which is the deep
 * collection /projects/broad/g1/deep/a/b/c1. Object names are hashes, so name order is not
 * collection order. Ten triples per object:
 *   kind        half 50 %, tenth 10 %, hundredth 1 %, rare 0.01 %, the rest k-N, N on a power law
 *   project     proj-gK: the object's group (a value every object of a scope has)
 *   instrument  inst-N, N on a power law over 200 values     campaign  camp-N, power law over 30
 *   operator    op-N, power law over 5,000                     site      site-N, power law over 50
 *   level       number, uniform 0-999                          quality   number, uniform 0-99
 *   run         text rNNNN, uniform over 10,000                observed  time, uniform 2020-2024
 */

interface BroadOptions {
  objects: number;
  runs: number;
  json: boolean;
}

const BASE = '/projects/broad';
const PER_COLLECTION = 1000;
const say = (line: string): void => void process.stderr.write(line + '\n');

/** The query shapes, by the share of objects they match. */
const SHAPES: Record<string, string> = {
  eq_0_01pct: 'kind = rare',
  eq_1pct: 'kind = hundredth',
  eq_10pct: 'kind = tenth',
  eq_50pct: 'kind = half',
  ne_50pct: 'kind != half',
  in_11pct: 'kind in (tenth, hundredth)',
  range_10pct: 'level between 100 and 199',
  prefix_1pct: "run prefix 'r00'",
  scope_value: 'project = proj-g1',
};
const FACETS = ['instrument', 'campaign'];

interface Reply<T = unknown> {
  status: number;
  text: string;
  body: T;
}

/** A caller of the API: a session (cookie and CSRF token) or a bearer token. */
export class Client {
  constructor(
    private readonly baseUrl: string,
    private readonly headers: Record<string, string>,
  ) {}

  static async signIn(baseUrl: string, username: string, password: string): Promise<Client> {
    const res = await fetch(`${baseUrl}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, password }),
    });
    if (res.status !== 200) throw new Error(`sign in as ${username}: ${res.status} ${await res.text()}`);
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('trib_session='));
    if (!cookie) throw new Error(`sign in as ${username}: no session cookie`);
    const { csrfToken } = (await res.json()) as { csrfToken: string };
    return new Client(baseUrl, { cookie, 'x-csrf-token': csrfToken });
  }

  static bearer(baseUrl: string, secret: string): Client {
    return new Client(baseUrl, { authorization: `Bearer ${secret}` });
  }

  async send<T>(method: string, path: string, body: unknown): Promise<Reply<T>> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { ...this.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, body: (text ? JSON.parse(text) : null) as T };
  }

  post<T>(path: string, body: unknown): Promise<Reply<T>> {
    return this.send<T>('POST', path, body);
  }

  put<T>(path: string, body: unknown): Promise<Reply<T>> {
    return this.send<T>('PUT', path, body);
  }
}

interface Caller {
  name: string;
  client: Client;
  /** Scopes this caller asks in (a token confined to g1 cannot ask from `/`). */
  scopes: Record<string, string>;
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
const round = (n: number, d = 2): number => Math.round(n * 10 ** d) / 10 ** d;

async function timedRuns(runs: number, call: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  return times;
}

/** Builds the catalog in SQL: collections, objects, triples (in batches, triggers on, capture off). */
export async function build(site: BenchSite, admin: Client, sql: pg.Client, objects: number): Promise<void> {
  const collections = Math.ceil(objects / PER_COLLECTION);
  const paths = Array.from({ length: collections }, (_, j) =>
    j === 1 ? `${BASE}/g1/deep/a/b/c1` : `${BASE}/g${j % 10}/c${j}`,
  );
  for (const path of paths) {
    const res = await admin.post('/api/v1/namespace/collections', { path, parents: true });
    if (res.status !== 201) throw new Error(`create ${path}: ${res.status} ${res.text}`);
  }
  await sql.query(`SET tributary.capture = 'off'`);
  await sql.query(
    `INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, created_by)
     SELECT c.id, 'f' || substr(md5(i::text), 1, 14), 1024, 'sha256:' || md5(i::text), c.owner_id, c.owner_id
       FROM generate_series(0, $2::int - 1) AS i
       JOIN unnest($1::text[]) WITH ORDINALITY AS p(path, n) ON p.n = i / ${PER_COLLECTION} + 1
       JOIN collections c ON c.trash_id = 0 AND c.path = p.path`,
    [paths, objects],
  );
  const { rows } = await sql.query<{ lo: string; hi: string }>(
    `SELECT min(o.id) AS lo, max(o.id) AS hi FROM data_objects o
       JOIN collections c ON c.id = o.collection_id WHERE c.path LIKE $1`,
    [`${BASE}/%`],
  );
  const lo = BigInt(rows[0]!.lo);
  const hi = BigInt(rows[0]!.hi);
  const step = 50_000n;
  // u(k): a uniform number in [0, 1) per object and attribute; pl(k, n): 1..n on a power law
  // (log-uniform: P(r) proportional to 1/r).
  const u = (k: number): string => `((hashint8(o.id * 16 + ${k}) & 2147483647)::float8 / 2147483648)`;
  const pl = (k: number, n: number): string => `floor(exp(${u(k)} * ln(${n})))::int`;
  for (let from = lo; from <= hi; from += step) {
    await sql.query(
      `INSERT INTO metadata_triples (object_id, attribute, value_type, value, num, time)
       SELECT o.id, t.a, t.ty, t.v, CASE WHEN t.ty = 'number' THEN t.v::float8 END,
              CASE WHEN t.ty = 'time' THEN t.v::timestamptz END
         FROM data_objects o JOIN collections c ON c.id = o.collection_id
        CROSS JOIN LATERAL (VALUES
          ('kind', 'text', CASE WHEN ${u(1)} < 0.5 THEN 'half' WHEN ${u(1)} < 0.6 THEN 'tenth'
                                WHEN ${u(1)} < 0.61 THEN 'hundredth' WHEN ${u(1)} < 0.6101 THEN 'rare'
                                ELSE 'k-' || ${pl(2, 100000)} END),
          ('project', 'text', 'proj-' || split_part(substr(c.path, ${BASE.length + 2}), '/', 1)),
          ('instrument', 'text', 'inst-' || ${pl(3, 200)}),
          ('campaign', 'text', 'camp-' || ${pl(4, 30)}),
          ('operator', 'text', 'op-' || ${pl(5, 5000)}),
          ('site', 'text', 'site-' || ${pl(6, 50)}),
          ('level', 'number', floor(${u(7)} * 1000)::int::text),
          ('quality', 'number', floor(${u(8)} * 100)::int::text),
          ('run', 'text', 'r' || lpad(floor(${u(9)} * 10000)::int::text, 4, '0')),
          ('observed', 'time', to_char(timestamptz '2020-01-01' + floor(${u(10)} * 1826) * interval '1 day', 'YYYY-MM-DD"T"00:00:00"Z"'))
        ) AS t(a, ty, v)
        WHERE o.id BETWEEN $1 AND $2 AND c.path LIKE $3`,
      [from.toString(), (from + step - 1n).toString(), `${BASE}/%`],
    );
    say(`  triples for objects up to id ${from + step - 1n > hi ? hi : from + step - 1n}`);
  }
  await sql.query(`SET tributary.capture = 'on'`);
  await sql.query('VACUUM (ANALYZE) metadata_triples, metadata_terms, data_objects, collections');
  void site;
}

export async function broadBench(options: BroadOptions): Promise<Record<string, number | string>> {
  const site = await localSite('thread');
  const sql = new pg.Client(site.connection);
  sql.on('error', () => undefined);
  // Interrupted: the site and its embedded PostgreSQL go with the bench (the temp directory too).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => {
      say(`\n${signal}: cleaning up`);
      void site.close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  try {
    say(`site: ${site.description}`);
    await sql.connect();
    const admin = await Client.signIn(site.baseUrl, site.admin!.username, site.admin!.password);
    const started = performance.now();
    say(`setup: ${options.objects} objects x 10 triples under ${BASE} (SQL, not timed)`);
    await build(site, admin, sql, options.objects);
    say(`setup: ${((performance.now() - started) / 1000).toFixed(1)} s`);

    // Callers: the administrator; a member of a group granted read on g1 (who sees a tenth); a
    // token confined to g1.
    const group = `broad-readers`;
    const expect2xx = (res: { status: number; text: string }, what: string): void => {
      if (res.status >= 300) throw new Error(`${what}: ${res.status} ${res.text}`);
    };
    expect2xx(await admin.post('/api/v1/groups', { name: group }), 'create group');
    const member = { username: 'broad-member', password: randomBytes(18).toString('base64url') };
    expect2xx(await admin.post('/api/v1/users', { ...member, isAdmin: false }), 'create user');
    expect2xx(
      await admin.put(`/api/v1/groups/${group}/members`, { username: member.username }),
      'add member',
    );
    expect2xx(await admin.put('/api/v1/permissions', { path: `${BASE}/g1`, group, level: 'read' }), 'grant');
    const memberClient = await Client.signIn(site.baseUrl, member.username, member.password);
    const token = await admin.post<{ secret: string }>('/api/v1/tokens', {
      name: 'broad-confined',
      scope: 'read',
      collection: `${BASE}/g1`,
    });
    expect2xx(token, 'create token');
    const confined = Client.bearer(site.baseUrl, token.body.secret);
    const scopes = { root: '/', tenth: `${BASE}/g1`, deep: `${BASE}/g1/deep/a/b/c1` };
    const callers: Caller[] = [
      { name: 'admin', client: admin, scopes },
      { name: 'member', client: memberClient, scopes },
      { name: 'token', client: confined, scopes: { tenth: scopes.tenth, deep: scopes.deep } },
    ];

    const query = (c: Caller, body: object): Promise<unknown> =>
      c.client.post('/api/v1/metadata/query', body).then((res) => {
        if (res.status !== 200) throw new Error(`query ${JSON.stringify(body)}: ${res.status} ${res.text}`);
        return res.body;
      });
    const pages: number[] = [];
    const totals: number[] = [];
    const facets: number[] = [];
    const errors: number[] = [];
    const byScope = new Map<string, number[]>();
    let estimated = 0;
    let replies = 0;
    for (const c of callers) {
      for (const [scopeName, scope] of Object.entries(c.scopes)) {
        for (const [shape, q] of Object.entries(SHAPES)) {
          const page = await timedRuns(options.runs, () => query(c, { q, scope, limit: 100, count: false }));
          const withTotal = await timedRuns(options.runs, () => query(c, { q, scope, limit: 100 }));
          pages.push(...page);
          totals.push(...withTotal);
          if (c.name === 'admin') {
            const key = `${scopeName}:${shape}`;
            byScope.set(key, withTotal);
          }
          // The reply's total against a plain SQL count of the readable matches.
          const reply = (await query(c, { q, scope, limit: 0 })) as {
            total: number;
            totalIsEstimate: boolean;
          };
          const exact = (await query(c, { q, scope, limit: 0, exact: true })) as { total: number };
          replies += 1;
          if (reply.totalIsEstimate) {
            estimated += 1;
            errors.push(Math.abs(reply.total - exact.total) / Math.max(1, exact.total));
          } else if (reply.total !== exact.total) {
            throw new Error(
              `${c.name} ${scopeName} ${shape}: exact total ${reply.total}, exact: true ${exact.total}`,
            );
          }
          say(
            `${c.name.padEnd(6)} ${scopeName.padEnd(5)} ${shape.padEnd(12)} page p95 ${percentile(
              page.sort((a, b) => a - b),
              95,
            ).toFixed(1)} ms, with total p95 ${percentile(
              withTotal.sort((a, b) => a - b),
              95,
            ).toFixed(
              1,
            )} ms, total ${reply.total}${reply.totalIsEstimate ? ` (estimate; exact ${exact.total})` : ''}`,
          );
        }
        const f = await timedRuns(options.runs, () =>
          query(c, { q: SHAPES.eq_50pct, scope, limit: 100, facets: FACETS }),
        );
        facets.push(...f);
        say(
          `${c.name.padEnd(6)} ${scopeName.padEnd(5)} facets p95 ${percentile(
            f.sort((a, b) => a - b),
            95,
          ).toFixed(1)} ms`,
        );
      }
    }
    // scoped_over_root: per shape, the administrator's median with total in the tenth against from /.
    const median = (xs: number[]): number =>
      percentile(
        [...xs].sort((a, b) => a - b),
        50,
      );
    const ratios = Object.keys(SHAPES).map(
      (s) => median(byScope.get(`tenth:${s}`)!) / median(byScope.get(`root:${s}`)!),
    );
    const exactTimes = await timedRuns(Math.max(5, Math.floor(options.runs / 4)), () =>
      query(callers[0]!, { q: SHAPES.eq_50pct, limit: 0, exact: true }),
    );
    const sorted = (xs: number[]): number[] => [...xs].sort((a, b) => a - b);
    const figures: Record<string, number | string> = {
      shape: 'broad',
      objects: options.objects,
      triples: options.objects * 10,
      broad_first_page_p50_ms: round(percentile(sorted(pages), 50)),
      broad_first_page_p95_ms: round(percentile(sorted(pages), 95)),
      broad_total_p50_ms: round(percentile(sorted(totals), 50)),
      broad_total_p95_ms: round(percentile(sorted(totals), 95)),
      broad_facets_p50_ms: round(percentile(sorted(facets), 50)),
      broad_facets_p95_ms: round(percentile(sorted(facets), 95)),
      scoped_over_root: round(Math.max(...ratios)),
      scoped_over_root_median: round(median(ratios)),
      broad_exact_total_50pct_p50_ms: round(median(exactTimes)),
      estimated_totals: estimated,
      replies_checked: replies,
      estimate_error_max: round(errors.length ? Math.max(...errors) : 0, 3),
    };
    return figures;
  } finally {
    await sql.end().catch(() => undefined);
    await site.close();
  }
}
