export * from './errors';
export * from './paths';
export * from './dto/common';
export * from './dto/accounts';
export * from './dto/tokens';
export * from './dto/namespace';
export * from './dto/replication';
export * from './client';
