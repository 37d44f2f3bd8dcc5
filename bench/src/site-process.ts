import { fork, type ChildProcess } from 'node:child_process';

/**
 * Starts one site as a process from the API's declared site script (`@tributary/api/site`), with
 * `env` added to this process's environment; resolves when it reports SiteReady over IPC. Its
 * stdout is discarded and its stderr shared with this process; `execArgv` goes to its node.
 */
export async function startSiteProcess(
  id: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<ChildProcess> {
  const child = fork(require.resolve('@tributary/api/site'), [], {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`site ${id} did not start within 120 s`)), 120_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`site ${id} exited before it was ready (${signal ?? `code ${code ?? '?'}`})`));
    });
    child.on('message', (m: unknown) => {
      if ((m as { type?: unknown } | null)?.type !== 'ready') return;
      clearTimeout(timer);
      resolve();
    });
  });
  child.removeAllListeners('exit');
  return child;
}

/** Stops a site process (resumed first if stopped with SIGSTOP): SIGTERM, then SIGKILL after 15 s. */
export async function stopSiteProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}
