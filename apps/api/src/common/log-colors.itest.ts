import { Logger } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestSite, type TestSite } from '../test/test-site';
import { logColors } from './log-colors';

describe('log colours', () => {
  it('are used on a terminal only, and never with NO_COLOR', () => {
    expect(logColors({}, { isTTY: true }, { isTTY: true })).toBe(true);
    expect(logColors({}, { isTTY: false }, { isTTY: true })).toBe(false);
    expect(logColors({}, { isTTY: true }, { isTTY: undefined })).toBe(false);
    expect(logColors({ NO_COLOR: '1' }, { isTTY: true }, { isTTY: true })).toBe(false);
    // no-color.org: an empty NO_COLOR does not count.
    expect(logColors({ NO_COLOR: '' }, { isTTY: true }, { isTTY: true })).toBe(true);
  });

  describe('a site whose output is redirected (not a terminal)', () => {
    let site: TestSite;
    beforeAll(async () => {
      site = await startTestSite({ LOG_LEVEL: 'log' });
    });
    afterAll(async () => {
      await site?.close();
    });

    it('writes its log lines without ANSI escape codes', () => {
      expect(process.stdout.isTTY).toBeFalsy();
      const written: string[] = [];
      const capture = (chunk: unknown): boolean => {
        written.push(String(chunk));
        return true;
      };
      const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture);
      const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture);
      try {
        new Logger('ColourCheck').log('plain line');
        new Logger('ColourCheck').warn('plain warning');
      } finally {
        out.mockRestore();
        err.mockRestore();
      }
      const text = written.join('');
      expect(text).toContain('plain line');
      expect(text).toContain('plain warning');
      expect(text).not.toContain('\u001b[');
    });
  });
});
