export * from './postgres';
export * from './factories';
export * from './http-client';
export * from './wait';
export * from './federation';
export * from './site';
export * from './conflict-record';
export * from './delay-proxy';
export type { TestPostgres } from './provided-context';
