import { randomBytes } from 'node:crypto';

/** One replication key per pair of sites, made on first use; `key(a, b)` and `key(b, a)` are the same. */
export function pairKeys(): (a: string, b: string) => string {
  const keys: Record<string, string> = {};
  return (a, b) => (keys[[a, b].sort().join(':')] ??= randomBytes(32).toString('base64url'));
}

export interface SiteSettings {
  id: string;
  /** The site's position among the federation's sites, from 0 (SITE_INDEX is one more). */
  index: number;
  /** The port each site listens on, at 127.0.0.1. */
  portOf: (id: string) => number;
  /** The sites it replicates with. */
  peers: string[];
  key: (a: string, b: string) => string;
  dataDir: string;
  portalDir: string;
  password: string;
  cycleSeconds: number;
  /** The site it joins from ('' for none). */
  joinFrom: string;
}

/** The settings a site of a federation on this machine starts with (logging errors only). */
export function siteSettings(s: SiteSettings): Record<string, string> {
  const url = (id: string): string => `http://127.0.0.1:${s.portOf(id)}`;
  return {
    TRIBUTARY_DATA_DIR: s.dataDir,
    HOST: '127.0.0.1',
    PORT: String(s.portOf(s.id)),
    PUBLIC_URL: url(s.id),
    SITE_ID: s.id,
    SITE_INDEX: String(s.index + 1),
    ADMIN_PASSWORD: s.password,
    LOG_LEVEL: 'error',
    PORTAL_DIR: s.portalDir,
    REPLICATION_PEERS: JSON.stringify(s.peers.map((p) => ({ id: p, url: url(p), key: s.key(s.id, p) }))),
    REPLICATION_CYCLE_SECONDS: String(s.cycleSeconds),
    JOIN_FROM: s.joinFrom,
  };
}
