import { describe, expect, it } from 'vitest';
import { curlExample, expiryFromDate, shellQuote } from './curl';

describe('curlExample', () => {
  it('quotes the header and URL for the shell', () => {
    expect(curlExample('http://127.0.0.1:8080', 'trib_abc', "/home/o'neil")).toBe(
      `curl -H 'Authorization: Bearer trib_abc' 'http://127.0.0.1:8080/api/v1/namespace/children?path=%2Fhome%2Fo'\\''neil'`,
    );
  });

  it('quotes single quotes', () => {
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
  });
});

describe('expiryFromDate', () => {
  it('is the end of the picked day, or nothing', () => {
    const iso = expiryFromDate('2027-03-04');
    expect(iso).toBeDefined();
    const d = new Date(iso!);
    expect([d.getFullYear(), d.getMonth(), d.getDate(), d.getHours()]).toEqual([2027, 2, 4, 23]);
    expect(expiryFromDate('')).toBeUndefined();
  });
});
