/** What the integration globalSetup hands to every test file through `inject('postgres')`. */
export interface TestPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  /** A migrated, empty catalog; each test site clones it. */
  template: string;
}

/**
 * The S3 server the integration globalSetup starts when TRIBUTARY_TEST_STORAGE=s3: every test site
 * (in-process and site processes) then keeps its bytes in a bucket of its own there, as its default
 * resource (docs/storage.md, "Tests").
 */
export interface TestS3 {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set only when the run's sites keep their bytes on S3 (TRIBUTARY_TEST_STORAGE=s3). */
    s3?: TestS3;
    postgres: TestPostgres;
    /** The built entry point of one site process (`apps/api/dist/cli/site.js`). */
    siteEntry: string;
  }
}
