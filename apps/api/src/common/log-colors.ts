/**
 * Whether the site's log lines may carry ANSI colours: only when both stdout and stderr are terminals
 * (a redirected or piped log gets plain text) and NO_COLOR is unset or empty (no-color.org).
 */
export function logColors(
  env: NodeJS.ProcessEnv = process.env,
  stdout: { isTTY?: boolean } = process.stdout,
  stderr: { isTTY?: boolean } = process.stderr,
): boolean {
  return !env.NO_COLOR && stdout.isTTY === true && stderr.isTTY === true;
}
