// The integration-test harness, for the engine's tests and an application's (apps/api).
export { createCatalog, registerSite, type TestCatalog } from './catalogs';
export { createFederation, type TestFederation } from './federation';
