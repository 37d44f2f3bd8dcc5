import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testBytes, uniqueName, type FederationSite } from '@tributary/testkit';
import { useTwoSites } from '../test/two-sites';

/**
 * WebDAV goes through the API's services, so location transparency and the holding site's say over
 * new versions hold for it unchanged: an object written over WebDAV at one site is read over
 * WebDAV at the other (through the site that holds the bytes), and a new version written at the
 * other site is decided by the holding one.
 */
describe('WebDAV across two sites', () => {
  let lsu: FederationSite;
  let tulane: FederationSite;
  const { exchange } = useTwoSites((sites) => ({ lsu, tulane } = sites));

  const dav = async (
    site: FederationSite,
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: Buffer,
  ): Promise<{ status: number; text: string; bytes: Buffer; headers: Headers }> => {
    const res = await fetch(`${site.url}/dav${path}`, {
      method,
      headers: { ...site.http.authHeaders(method), ...headers },
      body: body ? new Uint8Array(body) : undefined,
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, text: bytes.toString('utf8'), bytes, headers: res.headers };
  };

  it('reads at one site what was written at the other, and new versions go to the holding site', async () => {
    const dir = `/projects/${uniqueName('dav')}`;
    expect((await dav(lsu, 'MKCOL', dir)).status).toBe(201);
    const v1 = testBytes(2_000_000, 7);
    expect((await dav(lsu, 'PUT', `${dir}/data.bin`, {}, v1)).status).toBe(201);
    await exchange();

    const read = await dav(tulane, 'GET', `${dir}/data.bin`);
    expect(read.status).toBe(200);
    expect(read.bytes.equals(v1)).toBe(true);
    const ask =
      '<D:propfind xmlns:D="DAV:" xmlns:T="urn:tributary:dav"><D:prop><D:getetag/><T:site/></D:prop></D:propfind>';
    const props = await dav(tulane, 'PROPFIND', `${dir}/data.bin`, { depth: '0' }, Buffer.from(ask));
    expect(props.status).toBe(207);
    const sha = createHash('sha256').update(v1).digest('hex');
    expect(props.text).toContain(`<D:getetag>&quot;${sha}&quot;</D:getetag>`);
    expect(props.text).toContain('<T:site>lsu</T:site>');

    const v2 = testBytes(1_000, 8);
    expect((await dav(tulane, 'PUT', `${dir}/data.bin`, {}, v2)).status).toBe(204);
    await exchange();
    for (const site of [lsu, tulane]) {
      const again = await dav(site, 'GET', `${dir}/data.bin`);
      expect(again.bytes.equals(v2), site.id).toBe(true);
    }
  });
});
