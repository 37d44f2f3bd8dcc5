import { ApiError, ErrorCode, PathError } from '@tributary/shared';
import { ChecksumMismatchError, TransportError } from '@tributary/buffer';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config';
import { CliError, describeError, ExitCode } from './errors';
import { buildProgram, runCli } from './index';
import { completionWords } from './commands-local';
import { formatDuration, formatSize, formatTable, formatTime, sanitize } from './output';
import { baseName, endsWithSlash, resolveRemote } from './paths';
import { parseBatchRead } from './tree-transfer';

describe('exit codes', () => {
  it('maps API error codes to the documented exit codes', () => {
    const code = (c: ErrorCode, status: number) => describeError(new ApiError(status, c, 'x')).exitCode;
    expect(code(ErrorCode.NotFound, 404)).toBe(3);
    expect(code(ErrorCode.ValidationFailed, 422)).toBe(2);
    expect(code(ErrorCode.InvalidQuery, 422)).toBe(2);
    expect(code(ErrorCode.TokenRevoked, 401)).toBe(4);
    expect(code(ErrorCode.PermissionDenied, 403)).toBe(4);
    expect(code(ErrorCode.NameTaken, 409)).toBe(5);
    expect(code(ErrorCode.ConflictClosed, 409)).toBe(5);
    expect(code(ErrorCode.ReplicaUnavailable, 503)).toBe(6);
    expect(code(ErrorCode.Internal, 500)).toBe(6);
    expect(code(ErrorCode.ChecksumMismatch, 422)).toBe(7);
  });

  it('maps local failures: no answer, checksum, bad path, config, files, interruption', () => {
    expect(
      describeError(new TransportError('no answer', { cause: new Error('connect ECONNREFUSED') })).exitCode,
    ).toBe(ExitCode.Unreachable);
    expect(describeError(new ChecksumMismatchError('differs')).exitCode).toBe(ExitCode.Integrity);
    expect(describeError(new PathError('a path must be absolute', 'x')).exitCode).toBe(ExitCode.Usage);
    expect(describeError(new ConfigError('bad')).exitCode).toBe(ExitCode.Usage);
    const enoent = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT', path: '/tmp/x' });
    expect(describeError(enoent)).toMatchObject({
      exitCode: ExitCode.NotFound,
      message: 'no such local file or directory: /tmp/x',
    });
    expect(describeError(new DOMException('stop', 'AbortError')).exitCode).toBe(ExitCode.Interrupted);
    expect(describeError(new CliError('m', ExitCode.Unsupported)).exitCode).toBe(8);
    expect(describeError(new Error('plain')).exitCode).toBe(1);
  });

  it('gives a hint for what to do about auth errors', () => {
    expect(describeError(new ApiError(401, ErrorCode.TokenExpired, 'expired')).hint).toContain('trib login');
    expect(describeError(new ApiError(409, ErrorCode.NameTaken, 'taken')).hint).toContain('--force');
  });
});

describe('remote paths', () => {
  it('resolves relative paths, . and .. against the working collection', () => {
    expect(resolveRemote('data.h5', '/home/alice')).toBe('/home/alice/data.h5');
    expect(resolveRemote('./run1/../run2/', '/home/alice')).toBe('/home/alice/run2');
    expect(resolveRemote('..', '/home/alice')).toBe('/home');
    expect(resolveRemote('/projects//x', '/home/alice')).toBe('/projects/x');
    expect(resolveRemote('.', '/')).toBe('/');
  });

  it('refuses what the API would refuse, before sending it', () => {
    expect(() => resolveRemote('../../..', '/home')).toThrow(/above the root/);
    expect(() => resolveRemote('', '/')).toThrow(PathError);
    expect(() => resolveRemote('bad\u0000name', '/')).toThrow(/control/);
  });

  it('names and directory targets', () => {
    expect(baseName('/a/b.txt')).toBe('b.txt');
    expect(baseName('/')).toBe('');
    expect(endsWithSlash('dir/')).toBe(true);
    expect(endsWithSlash('/')).toBe(false);
  });
});

describe('output', () => {
  it('formats sizes, times and durations', () => {
    expect(formatSize(0)).toBe('0 B');
    expect(formatSize(1023)).toBe('1023 B');
    expect(formatSize(1536)).toBe('1.5 KiB');
    expect(formatSize(5 * 1024 ** 3)).toBe('5.0 GiB');
    expect(formatTime('2026-11-21T21:15:16.000Z')).toBe('2026-11-21 21:15');
    expect(formatTime(null)).toBe('-');
    expect(formatDuration(42_000)).toBe('42s');
    expect(formatDuration(3 * 3600_000 + 60_000)).toBe('3h 1m');
  });

  it('pads table columns and aligns numbers right', () => {
    const table = formatTable(
      [
        { n: 'a', s: 1 },
        { n: 'longer', s: 12345 },
      ],
      [
        { header: 'NAME', value: (r) => r.n },
        { header: 'SIZE', value: (r) => String(r.s), align: 'right' },
      ],
    );
    expect(table).toBe('NAME     SIZE\na           1\nlonger  12345\n');
  });

  it('shows control characters in names escaped, so a name cannot rewrite the terminal', () => {
    expect(sanitize('evil\u001b[2Jname\n')).toBe('evil\\x1b[2Jname\\x0a');
  });
});

describe('batch-read answers', () => {
  const frame = (path: string, data: string) =>
    `${JSON.stringify({ path, size: Buffer.byteLength(data), sha256: 'x' })}\n${data}`;

  it('splits objects, including empty ones and bytes that look like newlines', () => {
    const body = Buffer.from(frame('/a', 'one\ntwo') + frame('/b', '') + frame('/c', '3'));
    const parsed = parseBatchRead(body);
    expect([...parsed.keys()]).toEqual(['/a', '/b', '/c']);
    expect(parsed.get('/a')!.toString()).toBe('one\ntwo');
    expect(parsed.get('/b')!.length).toBe(0);
  });

  it('refuses a short or malformed answer instead of returning part of it', () => {
    expect(() => parseBatchRead(Buffer.from(frame('/a', 'abcdef').slice(0, -2)))).toThrow(/ended inside \/a/);
    expect(() => parseBatchRead(Buffer.from('{"path":"/a"'))).toThrow(/inside a header/);
    expect(() => parseBatchRead(Buffer.from('not json\n'))).toThrow(/not JSON/);
    expect(() => parseBatchRead(Buffer.from('{"path":"/a","size":-1}\n'))).toThrow(/without path and size/);
  });
});

describe('the command tree', () => {
  const io = () => {
    const out = { text: '', write: (s: string) => ((out.text += s), true) };
    const err = { text: '', write: (s: string) => ((err.text += s), true) };
    return { stdout: out, stderr: err, env: { TRIBUTARY_AGENT_HOME: '/nonexistent/trib-test' } };
  };

  it('has help for every command and subcommand', async () => {
    const program = buildProgram(io());
    const paths: string[][] = [];
    for (const c of program.commands) {
      paths.push([c.name()]);
      for (const s of c.commands) paths.push([c.name(), s.name()]);
    }
    expect(paths.length).toBeGreaterThan(30);
    for (const argv of paths) {
      const streams = io();
      expect(await runCli([...argv, '--help'], streams), argv.join(' ')).toBe(0);
      expect(streams.stdout.text).toContain(`Usage: trib ${argv.join(' ')}`);
    }
  });

  it('covers the pcommands the issue lists', () => {
    const words = completionWords(buildProgram(io()));
    for (const command of [
      'login',
      'site',
      'ls',
      'stat',
      'mkdir',
      'put',
      'get',
      'cp',
      'mv',
      'rm',
      'trash',
      'restore',
      'meta',
      'query',
      'group',
      'token',
      'conflicts',
      'mount',
      'unmount',
      'ui',
      'completion',
    ]) {
      expect(words.get('')).toContain(command);
    }
    expect(words.get('meta')).toEqual(expect.arrayContaining(['add', 'ls', 'rm']));
    expect(words.get('token')).toEqual(expect.arrayContaining(['create', 'list', 'revoke']));
    expect(words.get('conflicts')).toEqual(expect.arrayContaining(['list', 'decide']));
    expect(words.get('group')).toEqual(expect.arrayContaining(['switch']));
    expect(words.get('put')).toEqual(expect.arrayContaining(['-r', '--recursive', '--force', '--parallel']));
  });

  it('shows help for bare `trib` (exit 0) and for a group without its subcommand (exit 2)', async () => {
    const bare = io();
    expect(await runCli([], bare)).toBe(0);
    expect(bare.stderr.text).toContain('Usage: trib');
    const group = io();
    expect(await runCli(['meta'], group)).toBe(2);
    expect(group.stderr.text).toContain('Usage: trib meta');
  });

  it('answers bad arguments with exit code 2 and a message on stderr', async () => {
    for (const argv of [
      ['nope'],
      ['put'],
      ['ls', '--sort', 'x'],
      ['token', 'create', 'n', '--scope', 'root'],
      ['--json', 'get', '-j', 'many', 'a', 'b'],
    ]) {
      const streams = io();
      expect(await runCli(argv, streams), argv.join(' ')).toBe(2);
      expect(streams.stderr.text).toMatch(/^trib: /);
      expect(streams.stdout.text).toBe('');
    }
  });
});

describe('trib ui', () => {
  it('serves the local UI on 127.0.0.1, prints its URL, and stops when interrupted', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const os = await import('node:os');
    const home = await mkdtemp(`${os.tmpdir()}/trib-ui-cmd-`);
    try {
      const out = { text: '', write: (s: string) => ((out.text += s), true) };
      const err = { text: '', write: (s: string) => ((err.text += s), true) };
      const controller = new AbortController();
      const running = runCli(['ui', '--json'], {
        stdout: out,
        stderr: err,
        env: { TRIBUTARY_AGENT_HOME: home },
        signal: controller.signal,
      });
      await expect.poll(() => out.text).toContain('}');
      const { url, origin } = JSON.parse(out.text) as { url: string; origin: string };
      expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const first = await fetch(url, { redirect: 'manual' });
      expect(first.status).toBe(303);
      expect(first.headers.get('set-cookie')).toMatch(/^trib_ui=[0-9a-f]{64}; HttpOnly; SameSite=Strict/);
      expect((await fetch(`${origin}/api/state`)).status).toBe(401);
      controller.abort();
      expect(await running).toBe(0);
      await expect(fetch(`${origin}/`)).rejects.toThrow();
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
