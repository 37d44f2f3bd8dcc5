import { describe, expect, it } from 'vitest';
import { isOpenableUrl } from './ipc';

describe('the Electron bridge', () => {
  it('opens only web addresses outside the app', () => {
    expect(isOpenableUrl('https://data.example.org/portal')).toBe(true);
    expect(isOpenableUrl('http://127.0.0.1:8080/')).toBe(true);
    for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'smb://host/share', 'not a url', '']) {
      expect(isOpenableUrl(url), url).toBe(false);
    }
  });
});
