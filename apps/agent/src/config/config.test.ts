import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  activeSite,
  checkSetting,
  ConfigError,
  DEFAULT_SETTINGS,
  emptyConfig,
  loadConfig,
  normalizeSiteUrl,
  saveConfig,
  type AgentConfig,
} from './config';

describe('config.json', () => {
  let home: string;
  beforeEach(async () => {
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-config-'));
  });
  afterEach(async () => {
    await fs.rm(home, { recursive: true, force: true });
  });

  it('is written with mode 0600 and read back; a missing file is an empty configuration', async () => {
    const env = { TRIBUTARY_AGENT_HOME: home };
    expect(await loadConfig(env)).toEqual(emptyConfig());
    const config: AgentConfig = {
      current: 'lsu',
      sites: { lsu: { url: 'http://127.0.0.1:8080', token: 'trib_secret' } },
      settings: { ...DEFAULT_SETTINGS, parallel: 4 },
    };
    await saveConfig(config, env);
    expect((await fs.stat(path.join(home, 'config.json'))).mode & 0o777).toBe(0o600);
    expect(await loadConfig(env)).toEqual(config);
  });

  it('says where a damaged file is, and falls back to defaults for bad settings', async () => {
    const env = { TRIBUTARY_AGENT_HOME: home };
    await fs.writeFile(path.join(home, 'config.json'), '{not json');
    await expect(loadConfig(env)).rejects.toThrow(/config\.json is not valid JSON/);
    await fs.writeFile(
      path.join(home, 'config.json'),
      JSON.stringify({ sites: {}, settings: { parallel: 0, bufferMiB: 8 } }),
    );
    expect((await loadConfig(env)).settings).toEqual({ ...DEFAULT_SETTINGS, bufferMiB: 8 });
  });
});

describe('choosing the site', () => {
  const config: AgentConfig = {
    current: 'lsu',
    sites: {
      lsu: { url: 'http://lsu:8080', token: 't-lsu' },
      tulane: { url: 'http://tulane:8081', token: 't-tulane' },
    },
    settings: DEFAULT_SETTINGS,
  };

  it('uses the current site, then --site, then TRIBUTARY_SITE; TRIBUTARY_TOKEN replaces the token', () => {
    expect(activeSite(config, {})).toMatchObject({ name: 'lsu', token: 't-lsu', source: 'config' });
    expect(activeSite(config, {}, 'tulane')).toMatchObject({ name: 'tulane', token: 't-tulane' });
    expect(activeSite(config, { TRIBUTARY_SITE: 'tulane' }, 'lsu')).toMatchObject({
      name: 'tulane',
      source: 'env',
    });
    expect(activeSite(config, { TRIBUTARY_SITE: 'http://tulane:8081/api/v1' })).toMatchObject({
      name: 'tulane',
      token: 't-tulane',
    });
    const unsaved = activeSite(config, { TRIBUTARY_SITE: 'http://other:9000' });
    expect(unsaved?.name).toBe('http://other:9000');
    expect(unsaved?.token).toBeUndefined();
    expect(activeSite(config, { TRIBUTARY_TOKEN: 'from-env' })).toMatchObject({
      name: 'lsu',
      token: 'from-env',
      source: 'env',
    });
    expect(activeSite(emptyConfig(), {})).toBeUndefined();
  });

  it('refuses an unknown site name with what to do', () => {
    expect(() => activeSite(config, {}, 'uno')).toThrow(/trib login --site <url> --name uno/);
  });

  it('normalises site URLs', () => {
    expect(normalizeSiteUrl('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normalizeSiteUrl('https://data.example.org/tributary/api/v1/')).toBe(
      'https://data.example.org/tributary',
    );
    expect(() => normalizeSiteUrl('ftp://x')).toThrow(ConfigError);
    expect(() => normalizeSiteUrl('127.0.0.1:8080')).toThrow(/http:\/\//);
  });

  it('checks settings against their bounds', () => {
    expect(checkSetting('parallel', '8')).toEqual(['parallel', 8]);
    expect(checkSetting('cacheTtlSeconds', 0)).toEqual(['cacheTtlSeconds', 0]);
    expect(() => checkSetting('parallel', '65')).toThrow(/from 1 to 64/);
    expect(() => checkSetting('bufferMiB', '1.5')).toThrow(/whole number/);
    expect(() => checkSetting('colour', '1')).toThrow(/unknown setting/);
  });
});
