export * from './clock';
export * from './pace';
export * from './scrub';
