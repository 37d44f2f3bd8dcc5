import { describe, expect, it } from 'vitest';
import { numberedName } from './same-name';

describe('numberedName', () => {
  it('keeps the extension, also a compound one, and counts on from a numbered stem', () => {
    expect(numberedName('data.csv', 1, true)).toBe('data_1.csv');
    expect(numberedName('data.csv', 2, true)).toBe('data_2.csv');
    expect(numberedName('run.tar.gz', 1, true)).toBe('run_1.tar.gz');
    expect(numberedName('notes', 1, true)).toBe('notes_1');
    expect(numberedName('.bashrc', 1, true)).toBe('.bashrc_1');
    expect(numberedName('data_1.csv', 2, true)).toBe('data_2.csv');
    expect(numberedName('v1.2', 1, false)).toBe('v1.2_1');
  });
});
