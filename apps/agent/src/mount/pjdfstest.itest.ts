import { promises as fs } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ok, q, sh, useMountedFederation, type MountProcess } from '../testing/mount-harness';
import {
  buildPjdfstest,
  compare,
  counts,
  EXPECTED_FILE,
  formatNumbers,
  listTests,
  parseExpected,
  parseProve,
  rewriteExpected,
  suggestEntries,
  type FileResult,
} from '../testing/pjdfstest';

/**
 * pjdfstest (the POSIX file-system test suite) on a real mount of a one-site federation, compared
 * with the checked-in list of expected failures (pjdfstest-expected.txt beside this file): a
 * failure the list does not name fails the test, and so does a listed failure that passes now (the
 * list is kept current: PJDFSTEST_UPDATE=1 rewrites it). By default a CI-sized sample of the suite
 * runs (testing/pjdfstest.ts, SAMPLE_DIRS); PJDFSTEST_FULL=1 runs all of it. See docs/mount.md,
 * "Testing the mount".
 */

const FULL = process.env.PJDFSTEST_FULL === '1';
const UPDATE = process.env.PJDFSTEST_UPDATE === '1';
/** Longest a single test file may run before it is killed (its missing assertions then fail). */
const PER_FILE_SECONDS = 300;
const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)('pjdfstest on the mount', () => {
  let mount: MountProcess | undefined;
  let suite: string;
  let scratch: string;

  beforeAll(async () => {
    suite = await buildPjdfstest();
  }, 300_000);

  useMountedFederation(
    {
      federation: { ids: ['lsu'] },
      scratchPrefix: 'tributary-pjdfstest-',
      keepScratch: Boolean(process.env.PJDFSTEST_KEEP_LOG),
    },
    (started) => {
      ({ mount, scratch } = started);
    },
  );

  /**
   * Runs prove on the files, in a directory of the mount, as often as a bail-out (a test file that
   * stops the whole run) requires: the files after it run again.
   */
  async function prove(
    files: string[],
    tag: string,
  ): Promise<{ results: Map<string, FileResult>; log: string }> {
    const work = `${mount!.mountpoint}/pjdfstest`;
    await ok(`mkdir -p ${q(work)}`);
    const results = new Map<string, FileResult>();
    let log = '';
    let todo = files;
    for (let round = 1; todo.length > 0; round++) {
      const out = path.join(scratch, `prove-${tag}-${round}.log`);
      const paths = todo.map((f) => q(path.join(suite, 'tests', f))).join(' ');
      const run = await sh(
        `cd ${q(work)} && prove -v --exec ${q(`timeout ${PER_FILE_SECONDS} /bin/sh`)} ${paths} > ${q(out)} 2>&1`,
        (FULL ? 120 : 20) * 60_000,
      );
      const text = await fs.readFile(out, 'utf8');
      log += text;
      const parsed = parseProve(text);
      for (const [file, r] of parsed) results.set(file, r);
      const ran = todo.filter((f) => parsed.has(f));
      if (ran.length === 0)
        throw new Error(
          `prove ran none of ${todo.length} test files (exit ${run.code}):\n${text.slice(-3000)}`,
        );
      // After a bail-out prove stops: what it did not reach runs in the next round.
      const last = todo.indexOf(ran[ran.length - 1]!);
      todo = todo.slice(last + 1).filter((f) => !parsed.has(f));
    }
    return { results, log };
  }

  it(
    `fails only where ${path.basename(EXPECTED_FILE)} says (${FULL ? 'full suite' : 'CI sample; PJDFSTEST_FULL=1 for all'})`,
    async () => {
      const files = await listTests(suite, FULL);
      const started = Date.now();
      const { results, log } = await prove(files, 'run');
      const expectedText = await fs.readFile(EXPECTED_FILE, 'utf8');
      const expected = parseExpected(expectedText);
      let cmp = compare(results, expected);
      // pjdfstest compares times in whole seconds across a `sleep 1`, and a new file's times can
      // move by a few milliseconds after it is created: a check can land on either side of a second.
      // So the files that differ from the list run once more, and only a difference that repeats
      // counts; the ones that matched the second time are printed.
      const differing = (c: typeof cmp): Set<string> =>
        new Set([...c.unexpected, ...c.nowPassing, ...c.wholeFilesPassing].map((d) => d.file));
      const first = differing(cmp);
      if (first.size > 0 && first.size <= 20) {
        const again = await prove([...first], 'rerun');
        for (const [file, r] of again.results) results.set(file, r);
        cmp = compare(results, expected);
        const flaky = [...first].filter((f) => !differing(cmp).has(f));
        if (flaky.length)
          console.log(
            `pjdfstest: differed from the list on the first run, matched it on a second: ${flaky.join(', ')}`,
          );
      }
      const seconds = Math.round((Date.now() - started) / 1000);
      const c = counts(results);
      console.log(
        `pjdfstest (${FULL ? 'full suite' : 'CI sample'}): ${c.files} files, ${c.total} assertions: ` +
          `${c.passed} ok, ${c.failed} not ok (${cmp.expectedFailures} of them listed in pjdfstest-expected.txt, ${cmp.unexpected.length} not) in ${seconds} s`,
      );
      if (process.env.PJDFSTEST_KEEP_LOG) console.log(`prove output: ${scratch}/prove-*.log`);

      const report: string[] = [];
      if (cmp.unexpected.length) {
        report.push(
          `${cmp.unexpected.length} failures are not on the expected-failure list (a regression, or a gap to list with its reason):`,
        );
        for (const u of cmp.unexpected.slice(0, 200))
          report.push(`  ${u.file} ${u.number}: ${u.detail.slice(0, 300)}`);
        report.push('Suggested lines for the list (check each reason; a bug gets "BUG: ..."):');
        for (const l of suggestEntries(results, expected)) report.push(`  ${l}`);
      }
      if (cmp.nowPassing.length || cmp.wholeFilesPassing.length) {
        report.push('These expected failures PASS now: remove them from the list so it stays current');
        report.push(
          `(PJDFSTEST_UPDATE=1 rewrites ${path.relative(process.cwd(), EXPECTED_FILE)} from this run):`,
        );
        for (const p of cmp.nowPassing)
          report.push(`  line ${p.line}: ${p.file} ${formatNumbers(p.numbers)} now pass (${p.reason})`);
        for (const p of cmp.wholeFilesPassing)
          report.push(`  line ${p.line}: ${p.file} passes entirely (${p.reason})`);
      }
      if (UPDATE) {
        await fs.writeFile(EXPECTED_FILE, rewriteExpected(expectedText, results));
        console.log(`PJDFSTEST_UPDATE=1: rewrote ${EXPECTED_FILE} from this run; review the diff.`);
        if (report.length) console.log(report.join('\n'));
        return;
      }
      if (report.length === 0 && c.total === 0) report.push(`no assertions ran:\n${log.slice(-3000)}`);
      expect(report.join('\n'), 'pjdfstest against the expected-failure list').toBe('');
    },
    (FULL ? 150 : 25) * 60_000,
  );
});
