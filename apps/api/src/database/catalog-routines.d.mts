import type { ClientBase } from 'pg';

export function routines(client: ClientBase): Promise<Map<string, string>>;
export function dropRoutines(client: ClientBase): Promise<void>;
