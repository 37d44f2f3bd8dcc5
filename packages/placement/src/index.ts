export * from './clock';
export * from './pace';
export * from './rate';
export * from './wanted';
export * from './mover';
export * from './scrub';
export * from './frames';
export * from './erasure';
