import type { INestApplication } from '@nestjs/common';
import { METHOD_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ModulesContainer } from '@nestjs/core';
import type {
  OpenAPIObject,
  OperationObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
} from '@nestjs/swagger';
import { ErrorBodySchema, responseSchemas } from '@tributary/shared';
import { z } from 'zod';
import { PUBLIC_ROUTE } from '../auth/auth.decorators';

/**
 * The answers of every operation in the OpenAPI document, generated from the zod schemas the typed
 * client's types are inferred from (packages/shared/src/dto). Controllers say what each operation
 * answers on success (`@Answer`) and which error statuses it can answer beyond the ones every
 * operation of its kind can (`@Fails`, on a method or a whole controller); `documentAnswers`
 * (called by buildOpenApi) writes them into the document, with the statuses that follow from the
 * route itself:
 * - an operation that is not `@Public()`: 401 (no or a bad credential) and 403 (CSRF, token scope
 *   or confinement, account rights), and the `bearer` or `cookie` security requirement;
 * - an operation with parameters or a body: 422 VALIDATION_FAILED;
 * - an operation with a JSON body: 400 (malformed JSON), 413 (too large), 415 (an encoding or
 *   charset the parser does not take).
 * Every error has the shared body `{ error: { code, message, details? } }` (ErrorBodySchema).
 */

const ANSWERS = 'tributary:openapi-answers';
const FAILS = 'tributary:openapi-fails';
const RAW_BODY = 'tributary:openapi-raw-body';

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 416 | 422 | 429 | 503;

/** What each error status means, with the codes (packages/shared/src/errors.ts) it carries. */
const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'Malformed request: a body that is not valid JSON or an unreadable upload (VALIDATION_FAILED, UPLOAD_INCOMPLETE)',
  401: 'Not signed in, or a bad credential (UNAUTHENTICATED, INVALID_CREDENTIALS, TOKEN_INVALID, TOKEN_EXPIRED, TOKEN_REVOKED)',
  403: 'Not allowed (PERMISSION_DENIED, ADMIN_REQUIRED, TOKEN_SCOPE_INSUFFICIENT, TOKEN_OUTSIDE_COLLECTION, CSRF_FAILED, NOT_A_MEMBER, ACCOUNT_DISABLED)',
  404: 'No such thing, or none the caller may see (NOT_FOUND)',
  409: 'Conflicts with the current state (NAME_TAKEN, NOT_A_COLLECTION, NOT_AN_OBJECT, IS_A_SYMLINK, UPLOAD_OFFSET_MISMATCH, UPLOAD_BASE_CHANGED, UPLOAD_RANGE_OVERLAP, PURGE_NOT_YET, PURGE_BLOCKED, CONFLICT_CLOSED, UPDATE_REJECTED, CACHE_DISABLED, CACHE_FULL)',
  410: 'The upload session expired (UPLOAD_EXPIRED)',
  413: 'The body is larger than the operation takes (PAYLOAD_TOO_LARGE)',
  415: 'A body encoding or charset the API does not read (VALIDATION_FAILED)',
  416: 'The range is outside the object (RANGE_NOT_SATISFIABLE)',
  422: 'Invalid input (VALIDATION_FAILED, INVALID_PATH, INVALID_QUERY, INVALID_CURSOR, MOVE_INTO_ITSELF, ROOT_IMMUTABLE, CHECKSUM_MISMATCH, UPLOAD_RANGE_INVALID)',
  429: 'Too many attempts (RATE_LIMITED)',
  503: 'A site holding the bytes, the catalog or a storage resource does not answer (REPLICA_UNAVAILABLE, STORAGE_UNAVAILABLE)',
};

interface SuccessAnswer {
  status: number;
  description: string;
  /** A JSON body: one of the registered response schemas, or an array of one (`[Schema]`). */
  schema?: z.ZodType | [z.ZodType];
  /** A body that is not JSON: its media type(s). */
  media?: string[];
  headers?: Record<string, string>;
}

interface RawBody {
  media: string;
  schema: SchemaObject;
  description: string;
}

function pushMetadata<T>(key: string, value: T, target: object): void {
  Reflect.defineMetadata(
    key,
    [...((Reflect.getMetadata(key, target) as T[] | undefined) ?? []), value],
    target,
  );
}

/** A success answer of the operation: `status` with a JSON body of `schema` (none for 204). */
export function Answer(
  status: number,
  schema: z.ZodType | [z.ZodType] | null,
  description = '',
): MethodDecorator {
  return (_target, _key, descriptor) => {
    pushMetadata<SuccessAnswer>(
      ANSWERS,
      { status, description, ...(schema ? { schema } : {}) },
      descriptor.value as object,
    );
  };
}

/** A success answer whose body is not JSON (bytes, an event stream, text), or has none (HEAD). */
export function AnswerBytes(
  status: number,
  media: string[],
  description: string,
  headers?: Record<string, string>,
): MethodDecorator {
  return (_target, _key, descriptor) => {
    pushMetadata<SuccessAnswer>(
      ANSWERS,
      { status, description, media, ...(headers ? { headers } : {}) },
      descriptor.value as object,
    );
  };
}

/** Error statuses the operation (or every operation of the controller) can answer. */
export function Fails(...statuses: ErrorStatus[]): MethodDecorator & ClassDecorator {
  return (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    pushMetadata<ErrorStatus[]>(FAILS, statuses, (descriptor?.value as object | undefined) ?? target);
  };
}

/** A request body the route reads itself (a stream, multipart): its media type and schema. */
export function RawBody(media: string, schema: SchemaObject, description: string): MethodDecorator {
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(RAW_BODY, { media, schema, description }, descriptor.value as object);
  };
}

const REF = '#/components/schemas/';

/** Zod to OpenAPI 3.0, with references to the registered response schemas. */
function toOpenApi(schema: z.ZodType, io: 'input' | 'output'): SchemaObject {
  const json = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io,
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return tidy(json) as SchemaObject;
}

/** Removes what OpenAPI 3.0 has no keyword for (zod writes JSON Schema 2020-12 keywords here and there). */
function tidy(value: unknown, isPropertyMap = false): unknown {
  if (Array.isArray(value)) return value.map((v) => tidy(v));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!isPropertyMap && ['$schema', '$id', '$defs', 'propertyNames'].includes(k)) continue;
    out[k] = tidy(v, !isPropertyMap && k === 'properties');
  }
  if (isPropertyMap) return out;
  if (Array.isArray(out.type)) {
    // `type: ['string', 'number']` (2020-12) is `anyOf` in 3.0.
    const types = out.type as string[];
    delete out.type;
    const real = types.filter((t) => t !== 'null');
    if (types.includes('null')) out.nullable = true;
    if (real.length === 1) out.type = real[0];
    else out.anyOf = real.map((t) => ({ type: t }));
  }
  return out;
}

function idOf(schema: z.ZodType): string {
  const id = responseSchemas.get(schema)?.id;
  if (!id) throw new Error('a response schema must be registered with responseSchema() in packages/shared');
  return id;
}

function bodySchema(schema: z.ZodType | [z.ZodType]): SchemaObject | ReferenceObject {
  return Array.isArray(schema)
    ? { type: 'array', items: { $ref: REF + idOf(schema[0]) } }
    : { $ref: REF + idOf(schema) };
}

const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head'] as const;

interface Route {
  controller: { name: string; prototype: object };
  handler: object;
  /** The handler's method name. */
  key: string;
}

/** Every route handler of the app's controllers, by the operation id Swagger gives it. */
function routes(app: INestApplication): Map<string, Route> {
  const found = new Map<string, Route>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Route['controller'] | null;
      if (!controller) continue;
      const proto = controller.prototype as Record<string, unknown>;
      for (const key of Object.getOwnPropertyNames(proto)) {
        const handler = proto[key];
        if (key === 'constructor' || typeof handler !== 'function') continue;
        if (Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
        found.set(`${controller.name}_${key}`, { controller, handler, key });
      }
    }
  }
  return found;
}

/** The zod DTO class of the route's `@Body()`, if any. */
function bodyDto({ controller, key }: Route): { name: string; schema: z.ZodType } | undefined {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, key) ?? {}) as Record<
    string,
    { index: number }
  >;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, key) ?? []) as unknown[];
  for (const [argKey, arg] of Object.entries(args)) {
    if (argKey.split(':')[0] !== String(RouteParamtypes.BODY)) continue;
    const type = types[arg.index] as { name?: string; schema?: unknown } | undefined;
    if (type?.name && type.schema instanceof z.ZodType) return { name: type.name, schema: type.schema };
  }
  return undefined;
}

/**
 * Completes the document Swagger built from the controllers: every operation's answers (success
 * and errors, with schemas), its security requirement, request bodies the routes read themselves,
 * request schemas regenerated from zod (Swagger's own reading of them loses unions), and the
 * response schemas as components. An operation without `@Answer` keeps Swagger's bare default
 * answer, which apps/api/src/openapi.test.ts refuses (a site still starts without it).
 */
export function documentAnswers(app: INestApplication, doc: OpenAPIObject): OpenAPIObject {
  const byId = routes(app);
  const components = (doc.components ??= {});
  const schemas = (components.schemas ??= {});
  const responses = z.toJSONSchema(responseSchemas, {
    target: 'openapi-3.0',
    io: 'output',
    unrepresentable: 'any',
    uri: (id) => REF + id,
  }).schemas;
  for (const [id, schema] of Object.entries(responses)) schemas[id] = tidy(schema) as SchemaObject;

  for (const item of Object.values(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const op = (item as Record<string, OperationObject | undefined>)[method];
      if (!op?.operationId) continue;
      const route = byId.get(op.operationId);
      if (!route) continue;
      const dto = bodyDto(route);
      if (dto) schemas[dto.name] = toOpenApi(dto.schema, 'input');
      const raw = Reflect.getMetadata(RAW_BODY, route.handler) as RawBody | undefined;
      if (raw) {
        op.requestBody = {
          required: true,
          description: raw.description,
          content: { [raw.media]: { schema: raw.schema } },
        } satisfies RequestBodyObject;
      }

      const isPublic =
        (Reflect.getMetadata(PUBLIC_ROUTE, route.handler) ??
          Reflect.getMetadata(PUBLIC_ROUTE, route.controller)) === true;
      const hasInput = (op.parameters?.length ?? 0) > 0 || op.requestBody !== undefined;
      const jsonBody =
        op.requestBody !== undefined &&
        'content' in op.requestBody &&
        'application/json' in op.requestBody.content;
      const errors = new Set<ErrorStatus>([
        ...(isPublic ? [] : ([401, 403] as const)),
        ...(hasInput ? ([422] as const) : []),
        ...(jsonBody ? ([400, 413, 415] as const) : []),
        ...((Reflect.getMetadata(FAILS, route.controller) ?? []) as ErrorStatus[][]).flat(),
        ...((Reflect.getMetadata(FAILS, route.handler) ?? []) as ErrorStatus[][]).flat(),
      ]);

      const answers = (Reflect.getMetadata(ANSWERS, route.handler) ?? []) as SuccessAnswer[];
      const documented: OperationObject['responses'] = answers.length === 0 ? { ...op.responses } : {};
      for (const a of [...answers].sort((x, y) => x.status - y.status)) {
        const response: ResponseObject = { description: a.description };
        if (method === 'head') {
          // HEAD answers carry headers only.
        } else if (a.schema) response.content = { 'application/json': { schema: bodySchema(a.schema) } };
        else if (a.media?.length) {
          response.content = Object.fromEntries(
            a.media.map((m) => [m, { schema: { type: 'string', format: 'binary' } }]),
          );
        }
        if (a.headers) {
          response.headers = Object.fromEntries(
            Object.entries(a.headers).map(([name, description]) => [
              name,
              { description, schema: { type: 'string' } },
            ]),
          );
        }
        documented[String(a.status)] = response;
      }
      for (const status of [...errors].sort((x, y) => x - y)) {
        documented[String(status)] = {
          description: ERROR_DESCRIPTIONS[status],
          ...(method === 'head'
            ? {}
            : { content: { 'application/json': { schema: { $ref: REF + idOf(ErrorBodySchema) } } } }),
        };
      }
      op.responses = documented;
      if (isPublic) delete op.security;
      else op.security = [{ bearer: [] }, { cookie: [] }];
    }
  }
  return doc;
}
