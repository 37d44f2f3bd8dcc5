import { contextBridge, ipcRenderer } from 'electron';
import type { IpcChannel, TributaryBridge } from './ipc';

/**
 * Runs sandboxed with context isolation: the page gets exactly these two functions, each one
 * message on a fixed channel, and nothing of Node or of ipcRenderer itself.
 */
const openExternal: IpcChannel = 'tributary:open-external';
const appVersion: IpcChannel = 'tributary:app-version';

const bridge: TributaryBridge = {
  openExternal: (url: string) => ipcRenderer.invoke(openExternal, String(url)) as Promise<boolean>,
  appVersion: () => ipcRenderer.invoke(appVersion) as Promise<string>,
};

contextBridge.exposeInMainWorld('tributary', bridge);
