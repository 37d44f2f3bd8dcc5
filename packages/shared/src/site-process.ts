/**
 * What a started site process reports to whatever launched it (`npm start`, the test harness, the
 * benchmarks) as its first IPC message, or prints itself when run alone.
 */
export interface SiteReady {
  type: 'ready';
  siteId: string;
  url: string;
  catalog: string;
  storage: string;
  appliedMigrations: number;
  joinedFrom?: string;
  adminUsername: string;
  generatedAdminPassword?: string;
  adminCreated: boolean;
}
