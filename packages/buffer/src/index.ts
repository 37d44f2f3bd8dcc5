export * from './remote-file';
export * from './memory-budget';
export * from './buffered-file';
