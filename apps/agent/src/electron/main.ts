import path from 'node:path';
import {
  app,
  BrowserWindow,
  ipcMain,
  Menu,
  nativeImage,
  shell,
  Tray,
  type IpcMainInvokeEvent,
} from 'electron';
import { startUiServer, type UiServer } from '../ui/server';
import { isOpenableUrl, type IpcChannel } from './ipc';

/**
 * The Electron shell: one window showing the agent's local UI (served by src/ui on 127.0.0.1 in
 * this process), and a tray icon with Open and Quit. All logic lives in the UI server and the
 * agent; this file only creates the window, the tray and two IPC handlers. Web content runs with
 * context isolation and the sandbox on and no Node integration; navigation away from the UI's
 * origin and new windows are refused (links to the web go to the user's browser).
 */

// A 16x16 tray icon (a blue square with a white wave), inline so the shell needs no asset files.
const TRAY_ICON =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAOElEQVR42mMQc47/TwlmGDWAeAPQAUkGYANEG4ALYBiALIjPyTjDAB8gKhDJ0YwRBqRoHE3KCAwAVz4I06b0Bw8AAAAASUVORK5CYII=';

let ui: UiServer | undefined;
let window: BrowserWindow | undefined;
let tray: Tray | undefined;

function fromOurPage(event: IpcMainInvokeEvent): boolean {
  const url = event.senderFrame?.url ?? '';
  return ui !== undefined && (url === ui.origin || url.startsWith(`${ui.origin}/`));
}

function handle(
  channel: IpcChannel,
  listener: (event: IpcMainInvokeEvent, ...args: unknown[]) => unknown,
): void {
  ipcMain.handle(channel, (event, ...args: unknown[]) => {
    if (!fromOurPage(event)) throw new Error("refused: not the agent's page");
    return listener(event, ...args);
  });
}

function openWindow(): void {
  if (!ui) return;
  if (window && !window.isDestroyed()) {
    window.show();
    window.focus();
    return;
  }
  window = new BrowserWindow({
    width: 1100,
    height: 760,
    title: 'Tributary',
    webPreferences: {
      preload: path.join(__dirname, 'preload.js'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
    },
  });
  const origin = ui.origin;
  window.webContents.setWindowOpenHandler(({ url }) => {
    if (isOpenableUrl(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  window.webContents.on('will-navigate', (event, url) => {
    if (!url.startsWith(`${origin}/`)) event.preventDefault();
  });
  // The secret travels once in the URL; the page trades it for an HttpOnly cookie.
  void window.loadURL(ui.url);
}

async function start(): Promise<void> {
  // One shell per user: a second launch focuses the first.
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return;
  }
  app.on('second-instance', openWindow);
  await app.whenReady();
  ui = await startUiServer();
  handle('tributary:open-external', async (_event, url) => {
    if (typeof url !== 'string' || !isOpenableUrl(url)) return false;
    await shell.openExternal(url);
    return true;
  });
  handle('tributary:app-version', () => app.getVersion());
  tray = new Tray(nativeImage.createFromDataURL(TRAY_ICON));
  tray.setToolTip('Tributary agent');
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: 'Open Tributary', click: openWindow },
      { type: 'separator' },
      { label: 'Quit', click: () => app.quit() },
    ]),
  );
  tray.on('click', openWindow);
  openWindow();
  // Closing the window keeps the agent in the tray; Quit in the tray menu ends it.
  app.on('window-all-closed', () => undefined);
  app.on('before-quit', () => {
    void ui?.close();
    tray?.destroy();
  });
}

void start();
