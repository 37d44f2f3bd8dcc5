import { readFileSync } from 'node:fs';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import type { OpenAPIObject } from '@nestjs/swagger';
import { beforeAll, describe, expect, it } from 'vitest';
import { PageQuerySchema } from '@tributary/shared';
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

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head'] as const;

function operations(doc: OpenAPIObject): Array<[string, string, Operation]> {
  return Object.entries(doc.paths).flatMap(([p, item]) =>
    METHODS.flatMap((m) => {
      const op = (item as Record<string, Operation | undefined>)[m];
      return op ? [[m, p, op] as [string, string, Operation]] : [];
    }),
  );
}

/** Every `$ref` and every `type` anywhere under `value`. */
function walk(value: unknown, visit: (node: Json) => void): void {
  if (Array.isArray(value)) value.forEach((v) => walk(v, visit));
  else if (typeof value === 'object' && value !== null) {
    visit(value as Json);
    Object.values(value).forEach((v) => walk(v, visit));
  }
}

// Issue 24, item 15: the document states every answer, so a contract test can hold the API to it.
describe('OpenAPI answers', () => {
  let doc: OpenAPIObject;
  beforeAll(async () => {
    doc = await openApiDocument();
  });
  const PUBLIC = new Set(['HealthController_health', 'AuthController_login']);
  const SCRAPE = new Set(['HealthController_scrape']);

  it('documents a success answer with a schema, error answers with the error body, and security', () => {
    for (const [method, p, op] of operations(doc)) {
      const where = `${method.toUpperCase()} ${p}`;
      const statuses = Object.keys(op.responses).map(Number);
      const success = statuses.filter((s) => s < 400);
      expect(success.length, where).toBeGreaterThan(0);
      for (const s of success) {
        const content = op.responses[String(s)]!.content;
        if (s === 204 || s === 304 || method === 'head') expect(content, `${where} ${s}`).toBeUndefined();
        else expect(Object.keys(content ?? {}).length, `${where} ${s} has a body`).toBeGreaterThan(0);
        const json = content?.['application/json']?.schema;
        if (json) expect(JSON.stringify(json), `${where} ${s}`).toMatch(/#\/components\/schemas\//);
      }
      const errors = statuses.filter((s) => s >= 400);
      if (!PUBLIC.has(op.operationId) && !SCRAPE.has(op.operationId))
        expect(errors.length, `${where} documents errors`).toBeGreaterThan(0);
      expect(
        statuses.filter((s) => s >= 500 && s !== 503),
        where,
      ).toEqual([]);
      for (const s of errors) {
        // HEAD answers have no body; the health check's 503 is its own report (status degraded).
        if (method === 'head' || (op.operationId === 'HealthController_health' && s === 503)) continue;
        expect(op.responses[String(s)]!.content?.['application/json']?.schema, `${where} ${s}`).toEqual({
          $ref: '#/components/schemas/ErrorBody',
        });
      }
      if (SCRAPE.has(op.operationId)) {
        // Prometheus' scrape: how it is protected is a setting (see the README).
      } else if (PUBLIC.has(op.operationId)) {
        expect(op.security, where).toBeUndefined();
      } else {
        expect(op.security, where).toEqual([{ bearer: [] }, { cookie: [] }]);
        expect(statuses, where).toEqual(expect.arrayContaining([401, 403]));
      }
      if ((op.requestBody?.content ?? {})['application/json'])
        expect(statuses, where).toEqual(expect.arrayContaining([400, 413, 422]));
    }
  });

  it('answers PUT /data with 201 for a new object and 200 for a new version, from a streamed body', () => {
    const put = (doc.paths['/api/v1/data'] as Record<string, Operation>).put!;
    for (const s of ['200', '201'])
      expect(put.responses[s]?.content?.['application/json']?.schema).toEqual({
        $ref: '#/components/schemas/EntryDto',
      });
    expect(put.responses['409']).toBeDefined();
    expect(put.requestBody?.content['application/octet-stream']?.schema).toEqual({
      type: 'string',
      format: 'binary',
    });
  });

  it('documents the multipart body of POST /data/batch', () => {
    const post = (doc.paths['/api/v1/data/batch'] as Record<string, Operation>).post!;
    const schema = post.requestBody?.content['multipart/form-data']?.schema as Json;
    expect(schema).toMatchObject({
      type: 'object',
      properties: { file: { type: 'array', items: { type: 'string', format: 'binary' } } },
    });
    expect(post.responses['201']?.content?.['application/json']?.schema).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/EntryDto' },
    });
  });

  it('types UpdateTripleDto.value as a string or a number', () => {
    const schema = doc.components?.schemas?.UpdateTripleDto as { properties: Record<string, Json> };
    expect(schema.properties.value).toEqual({ anyOf: [{ type: 'string' }, { type: 'number' }] });
  });

  it('is valid OpenAPI 3.0: every $ref resolves, no 2020-12 type lists, peer routes left out', () => {
    const names = new Set(Object.keys(doc.components?.schemas ?? {}));
    walk(doc, (node) => {
      if (typeof node.$ref === 'string')
        expect(names).toContain(node.$ref.replace('#/components/schemas/', ''));
      if ('type' in node && typeof node.type !== 'object') return;
      if (Array.isArray(node.type)) expect.fail(`type list ${JSON.stringify(node)}`);
    });
    expect(Object.keys(doc.paths).filter((p) => p.includes('/replication/peer'))).toEqual([]);
  });
});

// Found by the contract run (seed 7, 100 examples): a 2,048-character cursor of 4-byte characters is
// a 24 KB URL, which Node refuses with 431 before the API sees it. Cursors are what listings hand
// out (base64url, ids, usernames): the document and the validation say so, and the longest fits.
describe('listing cursors', () => {
  it('are documented and validated as the characters listings hand out', async () => {
    const doc = await openApiDocument();
    for (const [method, p, op] of operations(doc)) {
      const params =
        (op as { parameters?: Array<{ name: string; in: string; schema: Json }> }).parameters ?? [];
      for (const param of params.filter((x) => x.name === 'cursor' && x.in === 'query')) {
        expect(param.schema, `${method} ${p}`).toMatchObject({ pattern: '^[A-Za-z0-9._-]*$' });
      }
    }
    expect(PageQuerySchema.safeParse({ cursor: 'é' }).success).toBe(false);
    expect(PageQuerySchema.safeParse({ cursor: 'eyJrIjowfQ' }).success).toBe(true);
  });
});
