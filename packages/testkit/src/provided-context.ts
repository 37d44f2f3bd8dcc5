/** What the integration globalSetup hands to every test file through `inject('postgres')`. */
export interface TestPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  /** A migrated, empty catalog; each test site clones it. */
  template: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: TestPostgres;
    /** The built entry point of one site process (`apps/api/dist/cli/site.js`). */
    siteEntry: string;
  }
}
