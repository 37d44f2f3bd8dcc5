/**
 * The IPC channels between the preload script and the main process: the whole surface the page
 * can reach. The preload runs sandboxed and cannot load this file at run time, so it uses the
 * channel names as literals checked against this type.
 */
export type IpcChannel = 'tributary:open-external' | 'tributary:app-version';

/** What the preload exposes to the page as `window.tributary`. */
export interface TributaryBridge {
  /** Opens an http(s) URL in the user's browser (the site's portal, docs); anything else is refused. */
  openExternal(url: string): Promise<boolean>;
  appVersion(): Promise<string>;
}

/** Only web addresses leave the app; file:, javascript: and custom schemes do not. */
export function isOpenableUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:';
  } catch {
    return false;
  }
}
