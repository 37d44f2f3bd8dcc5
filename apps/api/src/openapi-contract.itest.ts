import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from './test/test-site';

/**
 * The contract run (issue 24, item 15): schemathesis generates requests from the OpenAPI document
 * the site serves and checks every answer against it: no 5xx, no status the operation does not
 * document, and every JSON body valid against its documented schema (the zod DTOs of
 * packages/shared). Needs schemathesis (`pip install schemathesis`; scripts/setup.sh installs it).
 *
 * CONTRACT_EXAMPLES sets the examples per operation (5 by default, a CI-sized run of about a
 * minute); CONTRACT_SEED another seed (the default is fixed, so a failure reproduces);
 * CONTRACT_SCHEMA a document file to use instead of the served one.
 *
 * Left out of the run, because they end the run's own credentials or never end:
 * - POST /api/v1/auth/logout, DELETE /api/v1/tokens/{id} (it could revoke the run's token);
 * - GET /api/v1/events (a Server-Sent Events stream stays open until the client leaves).
 */
const EXAMPLES = Number(process.env.CONTRACT_EXAMPLES ?? 5);
const SEED = process.env.CONTRACT_SEED ?? '24015';
const PYTHON = process.env.SCHEMATHESIS_PYTHON ?? 'python3';
/** A document file to hold the site to instead of the one it serves (e.g. an older openapi.json). */
const SCHEMA = process.env.CONTRACT_SCHEMA;
/** More schemathesis options, space-separated (e.g. `--report ndjson --report-dir /tmp/st`). */
const EXTRA_ARGS = (process.env.CONTRACT_ARGS ?? '').split(' ').filter(Boolean);
const EXCLUDED_OPERATIONS = ['AuthController_logout', 'TokensController_revoke', 'EventsController_stream'];

interface Run {
  code: number | null;
  output: string;
}

function schemathesis(args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    // Its console script may not be on PATH (pip --user); the module is wherever python3 has it.
    const child = spawn(
      PYTHON,
      ['-c', 'import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())', ...args],
      {
        cwd: os.tmpdir(),
        env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_TELEMETRY: 'false' },
        stdio: 'pipe',
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the API against its OpenAPI document (schemathesis)', () => {
  let site: TestSite;
  let token: string;

  beforeAll(async () => {
    site = await startTestSite();
    // An administrator of its own whose name no generated request guesses, so the run cannot
    // disable it or take its rights away.
    const account = await site.createAccount({
      username: `contract-${randomBytes(6).toString('hex')}`,
      isAdmin: true,
    });
    const client = await site.login(account.username, account.password);
    const created = await client.post<CreatedTokenDto>('/api/v1/tokens', {
      name: 'contract',
      scope: 'admin',
    });
    expect(created.status).toBe(201);
    token = created.body.secret;
    // Something to find: a collection with an object and a triple.
    const admin = site.asToken(token);
    expect(
      (await admin.post('/api/v1/namespace/collections', { path: '/contract', parents: true })).status,
    ).toBe(201);
    expect(
      (await admin.request('PUT', '/api/v1/data', { query: { path: '/contract/a.txt' }, body: 'hello' }))
        .status,
    ).toBe(201);
  });

  afterAll(async () => {
    await site?.close();
  });

  // What longer runs found, kept as plain requests so each is checked on every run.
  it('answers 422, not 500, for a NUL in an attribute prefix (seed 11, 300 examples)', async () => {
    const res = await site
      .asToken(token)
      .get('/api/v1/metadata/attributes', { query: { prefix: 'a\u0000' } });
    expect(res.status, res.text).toBe(422);
  });

  it('answers only what the document states, and never a 5xx', { timeout: 15 * 60_000 }, async () => {
    const run = await schemathesis(
      [
        'run',
        SCHEMA ? path.resolve(SCHEMA) : `${site.url}/api/docs/openapi.json`,
        '--url',
        site.url,
        '--checks',
        'not_a_server_error,status_code_conformance,response_schema_conformance',
        '--max-examples',
        String(EXAMPLES),
        '--seed',
        SEED,
        // One worker: with two, Python 3.11's ast module can fail in schemathesis' own threads
        // ("SystemError: AST constructor recursion depth mismatch"), a runtime error of the tool.
        '--workers',
        '1',
        '--request-timeout',
        '60',
        '--header',
        `Authorization: Bearer ${token}`,
        ...EXCLUDED_OPERATIONS.flatMap((id) => ['--exclude-operation-id', id]),
        '--suppress-health-check',
        'all',
        // No example database (it would live in the working directory and replay old cases).
        '--generation-database',
        'none',
        ...EXTRA_ARGS,
      ],
      14 * 60_000,
    );
    // The report (operations, test cases, warnings, failures) shows in the test's output either way,
    // each line cut short (a generated URL can be megabytes); the whole of it is kept in a file.
    const report = path.join(os.tmpdir(), `schemathesis-${SEED}-${EXAMPLES}.txt`);
    await writeFile(report, run.output);
    const shown = run.output
      .split('\n')
      .map((line) => (line.length > 400 ? `${line.slice(0, 400)}... (${line.length} characters)` : line))
      .join('\n');
    console.log(`${shown}\n(the whole report: ${report})`);
    expect(run.code, `schemathesis failed; the report is above and in ${report}`).toBe(0);
  });
});
