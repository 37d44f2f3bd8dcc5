/**
 * `npm run wan -- [--profile regional] LISTEN=HOST:PORT ...`: puts an emulated WAN (Toxiproxy) in
 * front of running sites or databases until Ctrl-C. Each LISTEN=HOST:PORT makes a link listening on
 * 127.0.0.1:LISTEN that forwards to HOST:PORT with the profile's latency, jitter and resets. Point
 * REPLICATION_PEERS (or DATABASE_URL, or a client) at the listening ports. See docs/wan.md.
 */
import { parseArgs } from 'node:util';
import { startWan, wanProfile, WAN_PROFILES } from './wan';

const USAGE = `npm run wan -- [--profile campus|regional|intercontinental] LISTEN=HOST:PORT ...

  LISTEN=HOST:PORT   a link on 127.0.0.1:LISTEN forwarding to HOST:PORT
  --profile          ${Object.entries(WAN_PROFILES)
    .map(
      ([n, p]) =>
        `${n} (${p.rttMs} ms round trip${p.resetFraction ? `, ${p.resetFraction * 100}% of connections reset` : ''})`,
    )
    .join(', ')}; default regional

Example, three sites of \`npm start\` seeing each other across a regional network:
  npm run wan -- 18080=127.0.0.1:8080 18081=127.0.0.1:8081 18082=127.0.0.1:8082
then list the 1808x ports in each site's REPLICATION_PEERS.`;

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { profile: { type: 'string', default: 'regional' }, help: { type: 'boolean' } },
  });
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const profile = wanProfile(values.profile ?? 'regional');
  const specs = positionals.map((spec) => {
    const m = /^(\d{1,5})=([^:\s]+):(\d{1,5})$/.exec(spec);
    if (!m) throw new Error(`"${spec}" is not LISTEN=HOST:PORT`);
    return { listen: Number(m[1]), upstream: `${m[2]}:${m[3]}` };
  });
  const wan = await startWan({ profile });
  for (const s of specs) {
    const link = await wan.link(`link-${s.listen}`, s.upstream, s.listen);
    console.log(`${link.url} -> ${s.upstream} (${values.profile})`);
  }
  console.log(`Toxiproxy API at ${wan.apiUrl} (add faults with its REST API). Ctrl-C stops.`);
  const stop = (): void => {
    void wan.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
