import { readFileSync } from 'node:fs';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from './openapi';

const shared = path.resolve(__dirname, '../../../packages/shared');

// The typed client in packages/shared is compiled against api-types.ts, generated from openapi.json.
// These fail when a controller changes without `npm run build && npm run openapi` being rerun.
describe('OpenAPI document in packages/shared', () => {
  it('equals what the API serves', async () => {
    const committed: unknown = JSON.parse(readFileSync(path.join(shared, 'openapi.json'), 'utf8'));
    expect(JSON.parse(JSON.stringify(await openApiDocument()))).toEqual(committed);
  });

  it('api-types.ts is generated from it', async () => {
    const generated = astToString(await openapiTS(readFileSync(path.join(shared, 'openapi.json'), 'utf8')));
    const committed = readFileSync(path.join(shared, 'src/api-types.ts'), 'utf8');
    const body = (text: string): string => text.replace(/^\/\*\*[\s\S]*?\*\/\s*/, '').trim();
    expect(body(committed)).toBe(body(generated));
  });
});
