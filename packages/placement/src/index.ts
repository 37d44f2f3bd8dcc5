export * from './clock';
export * from './pace';
