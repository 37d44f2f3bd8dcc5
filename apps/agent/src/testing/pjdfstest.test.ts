import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  compare,
  counts,
  EXPECTED_FILE,
  formatNumbers,
  guessReason,
  parseExpected,
  parseNumbers,
  parseProve,
  rewriteExpected,
} from './pjdfstest';

const PROVE = `/x/pjdfstest/tests/open/00.t .. 
1..5
ok 1
not ok 2 - tried 'lstat pjdfstest_ab type,mode', expected regular,0755, got regular,0644
ok 3
not ok 4 - tried '-u 65534 open pjdfstest_ab O_RDONLY', expected 0, got EACCES
not ok 5 - tried 'unlink pjdfstest_ab', expected 0, got ENOENT
Failed 3/5 subtests 
/x/pjdfstest/tests/open/01.t .. 
1..3
ok 1
not ok 2 # TODO Linux does it differently
ok 3
ok
/x/pjdfstest/tests/utimensat/09.t .. 
1..4
ok 1
Bail out!
`;

describe('pjdfstest helpers', () => {
  it('parses prove -v output per file, TODO as passed, unreported assertions as failed', () => {
    const r = parseProve(PROVE);
    expect([...r.keys()]).toEqual(['open/00.t', 'open/01.t', 'utimensat/09.t']);
    expect([...r.get('open/00.t')!.failed.keys()]).toEqual([2, 4, 5]);
    expect(r.get('open/01.t')!.failed.size).toBe(0);
    expect(r.get('utimensat/09.t')).toMatchObject({ planned: 4, bailedOut: true });
    expect([...r.get('utimensat/09.t')!.failed.keys()]).toEqual([2, 3, 4]);
    expect(counts(r)).toEqual({ files: 3, total: 12, passed: 6, failed: 6 });
  });

  it('reads and writes assertion lists', () => {
    expect(parseNumbers('3,6,9-12')).toEqual([3, 6, 9, 10, 11, 12]);
    expect(formatNumbers([12, 3, 9, 10, 11, 6])).toBe('3,6,9-12');
    expect(() => parseNumbers('3-1')).toThrow();
  });

  it('compares a run with the list: unexpected failures, and listed ones that pass now', () => {
    const r = parseProve(PROVE);
    const list = parseExpected(
      [
        '# comment',
        'open/00.t 2,3 modes (until modes land)',
        'open/01.t ~2 flaky, not reported',
        'utimensat/09.t * times (until times land)',
      ].join('\n'),
    );
    const cmp = compare(r, list);
    expect(cmp.unexpected.map((u) => `${u.file} ${u.number}`)).toEqual(['open/00.t 4', 'open/00.t 5']);
    expect(cmp.nowPassing).toEqual([
      { file: 'open/00.t', numbers: [3], reason: 'modes (until modes land)', line: 2 },
    ]);
    expect(cmp.expectedFailures).toBe(4);
  });

  it('guesses reasons; a failure with none follows from the one before', () => {
    expect(guessReason("not ok 4 - tried '-u 65534 open x O_RDONLY', expected 0, got EACCES")).toBe(
      'other users',
    );
    expect(guessReason("not ok 2 - tried 'mkfifo x 0644', expected 0, got ENOSYS")).toBe('special files');
    expect(guessReason("not ok 5 - tried 'unlink x', expected 0, got ENOENT")).toBeUndefined();
    const text = ['# head', '', 'open/00.t 2,3 modes (until modes land)', 'utimensat/09.t * times', ''].join(
      '\n',
    );
    expect(rewriteExpected(text, parseProve(PROVE))).toBe(
      [
        '# head',
        '',
        'open/00.t 2 modes (until modes land)',
        'open/00.t 4-5 other users',
        'utimensat/09.t * times',
        '',
      ].join('\n'),
    );
  });

  it('the checked-in list parses', () => {
    expect(parseExpected(readFileSync(EXPECTED_FILE, 'utf8')).length).toBeGreaterThan(50);
  });
});
