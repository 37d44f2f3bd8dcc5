import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { runCli } from '../cli/index';

/** What one `trib` run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws when it is not). */
  json<T = unknown>(): T;
}

class Capture {
  text = '';
  constructor(readonly isTTY = false) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

function toRun(code: number, stdout: string, stderr: string): CliRun {
  return {
    code,
    stdout,
    stderr,
    json<T>() {
      return JSON.parse(stdout) as T;
    },
  };
}

/** Runs `trib` in this process through runCli, with its own agent home and working directory. */
export async function tribInProcess(
  argv: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; stdin?: string },
): Promise<CliRun> {
  const stdout = new Capture();
  const stderr = new Capture();
  const stdin =
    options.stdin !== undefined
      ? (await import('node:stream')).Readable.from([Buffer.from(options.stdin)])
      : undefined;
  const code = await runCli(argv, { stdout, stderr, env: options.env, cwd: options.cwd, stdin });
  return toRun(code, stdout.text, stderr.text);
}

/** The built executable: `node apps/agent/dist/cli/main.js` (run `npm run build -w @tributary/agent` first). */
export const CLI_MAIN = path.resolve(__dirname, '../../dist/cli/main.js');

/** Runs `trib` as a real child process (exit codes, stdout and stderr as a shell sees them). */
export function tribProcess(
  argv: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string },
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI_MAIN, ...argv],
      { env: { PATH: process.env.PATH, ...options.env }, cwd: options.cwd, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve(toRun(code, stdout, stderr));
      },
    );
  });
}

export const sha256Hex = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** Relative path → SHA-256 of every file below `root`. */
export async function treeHashes(root: string): Promise<Map<string, string>> {
  const result = new Map<string, string>();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), rel);
      else result.set(rel, sha256Hex(await fs.readFile(path.join(dir, entry.name))));
    }
  };
  await walk(root, '');
  return result;
}
