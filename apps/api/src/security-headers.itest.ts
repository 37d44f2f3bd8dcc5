import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, startTestSite, type TestClient, type TestSite } from './test/test-site';

/** The directives of a Content-Security-Policy header, by name. */
function directives(header: string | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) out.set(name.toLowerCase(), values.join(' '));
  }
  return out;
}

describe('security headers', () => {
  let site: TestSite;
  let admin: TestClient;
  beforeAll(async () => {
    site = await startTestSite();
    admin = await site.admin();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('serves the portal with nosniff, a same-origin script policy and no framing', async () => {
    const res = await site.anonymous().get('/', { headers: { accept: 'text/html' } });
    expectStatus(res, 200);
    expect(res.text).toContain('<div id="root">');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const csp = directives(res.headers.get('content-security-policy'));
    expect(csp.get('default-src')).toBe("'self'");
    expect(csp.get('script-src')).toBe("'self'");
    expect(csp.get('object-src')).toBe("'none'");
    expect(csp.get('frame-ancestors')).toBe("'none'");
    // Served over plain HTTP on a laptop too: the policy must not upgrade the portal's requests.
    expect(csp.has('upgrade-insecure-requests')).toBe(false);
    // A page the browser routes (/browse/...) gets the same.
    const deep = await site.anonymous().get('/browse/home/admin', { headers: { accept: 'text/html' } });
    expect(directives(deep.headers.get('content-security-policy')).get('frame-ancestors')).toBe("'none'");
  });

  it('sends nosniff on API answers, errors included', async () => {
    expect((await site.anonymous().get('/api/health')).headers.get('x-content-type-options')).toBe('nosniff');
    expect((await site.anonymous().get('/api/v1/me')).headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('lets the API documentation page load its own scripts and styles', async () => {
    const res = await site.anonymous().get('/api/docs/', { headers: { accept: 'text/html' } });
    expectStatus(res, 200);
    const csp = directives(res.headers.get('content-security-policy'));
    expect(csp.get('script-src')).toBe("'self'");
    // Swagger UI's page has an inline <style>.
    expect(csp.get('style-src')).toContain("'unsafe-inline'");
  });

  it.each([
    ['page.html', 'text/html; charset=utf-8', '<script>alert(document.cookie)</script>'],
    [
      'drawing.svg',
      'image/svg+xml',
      '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    ],
    ['code.js', 'application/javascript', 'alert(1)'],
    [
      'feed.xml',
      'application/xhtml+xml',
      '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>',
    ],
  ])(
    'downloads %s (%s) as an attachment in a sandbox, never as a page of the site',
    async (name, type, body) => {
      const objectPath = `/home/admin/${Date.now()}-${name}`;
      expectStatus(
        await admin.request('PUT', '/api/v1/data', {
          query: { path: objectPath },
          headers: { 'content-type': type },
          body,
        }),
        201,
      );
      for (const method of ['GET', 'HEAD']) {
        const res = await admin.request(method, '/api/v1/data', { query: { path: objectPath } });
        expectStatus(res, 200);
        expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        const csp = directives(res.headers.get('content-security-policy'));
        expect(csp.get('default-src')).toBe("'none'");
        expect(csp.has('sandbox')).toBe(true);
      }
    },
  );
});
