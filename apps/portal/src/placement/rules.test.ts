import { describe, expect, it } from 'vitest';
import { copyStateLabel, describeRule, isExpired, ruleRequest } from './rules';

describe('placement rule helpers', () => {
  it('builds the request from the form, leaving out what is empty', () => {
    expect(ruleRequest('/p', { copies: '2', sites: [], condition: '  ', expires: '' })).toEqual({
      path: '/p',
      copies: 2,
    });
    const local = '2030-01-31T12:30';
    expect(
      ruleRequest('/p', { copies: '1', sites: ['lsu', 'uno'], condition: ' a = b ', expires: local }),
    ).toEqual({
      path: '/p',
      copies: 1,
      sites: ['lsu', 'uno'],
      condition: 'a = b',
      expiresAt: new Date(local).toISOString(),
    });
  });

  it('describes rules and copy states in words', () => {
    expect(describeRule({ copies: 1, sites: null })).toBe('1 copy at any site');
    expect(describeRule({ copies: 2, sites: ['lsu', 'tulane'] })).toBe('2 copies among lsu, tulane');
    expect(copyStateLabel({ state: 'good', current: true })).toBe('good');
    expect(copyStateLabel({ state: 'good', current: false })).toBe('good, but of older bytes');
    expect(copyStateLabel({ state: 'pending', current: false })).toBe('waiting to be copied');
    expect(isExpired({ expiresAt: null })).toBe(false);
    expect(isExpired({ expiresAt: '2000-01-01T00:00:00Z' })).toBe(true);
  });
});
