export * from './agent-home';
