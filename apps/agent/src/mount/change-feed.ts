import {
  CHANGE_EVENT,
  READY_EVENT,
  RESYNC_EVENT,
  type ChangeEventDto,
  type ReadyEventDto,
} from '@tributary/shared';

export interface ChangeFeedOptions {
  baseUrl: string;
  token: string;
  /** The subtree to follow (a federation path). */
  path: string;
  onChange(change: ChangeEventDto): void;
  /** Changes may have been missed: drop every cache. */
  onResync(): void;
  /** The stream is live (true) or broken (false). */
  onConnected?(connected: boolean): void;
  /** Wait before reconnecting (ms). */
  retryMs?: number;
  /**
   * Longest wait for the stream's answer (its head) when connecting (ms; default 10000): a site
   * that accepts connections but does not answer (paused) is tried again instead of waited for.
   */
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * Follows `GET /api/v1/events` (Server-Sent Events) and reconnects by itself, resuming with
 * Last-Event-ID; the site answers with `resync` when it cannot resume (it restarted). A stream
 * silent for more than twice its heartbeat interval is treated as dead.
 */
export class ChangeFeed {
  private controller: AbortController | undefined;
  private stopped = false;
  private lastEventId: string | undefined;
  private connected = false;
  private running: Promise<void> | undefined;

  constructor(private readonly options: ChangeFeedOptions) {}

  get isConnected(): boolean {
    return this.connected;
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort();
    await this.running;
  }

  private setConnected(connected: boolean): void {
    if (this.connected === connected) return;
    this.connected = connected;
    this.options.onConnected?.(connected);
  }

  private async loop(): Promise<void> {
    const fetchImpl = this.options.fetch ?? globalThis.fetch.bind(globalThis);
    let everConnected = false;
    while (!this.stopped) {
      const controller = new AbortController();
      this.controller = controller;
      let watchdog: NodeJS.Timeout | undefined;
      try {
        const headers: Record<string, string> = {
          authorization: `Bearer ${this.options.token}`,
          accept: 'text/event-stream',
        };
        if (this.lastEventId) headers['last-event-id'] = this.lastEventId;
        const url = `${this.options.baseUrl}/api/v1/events?path=${encodeURIComponent(this.options.path)}`;
        watchdog = setTimeout(() => controller.abort(), this.options.connectTimeoutMs ?? 10_000);
        const res = await fetchImpl(url, { headers, signal: controller.signal });
        clearTimeout(watchdog);
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        // Reconnected without being able to resume: what changed meanwhile is unknown.
        if (everConnected && !this.lastEventId) this.options.onResync();
        let silenceMs = 45_000;
        const arm = (): void => {
          clearTimeout(watchdog);
          watchdog = setTimeout(() => controller.abort(), silenceMs);
        };
        arm();
        const decoder = new TextDecoder();
        let text = '';
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          arm();
          text += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = text.indexOf('\n\n')) >= 0) {
            const block = text.slice(0, end);
            text = text.slice(end + 2);
            const event = parseBlock(block);
            if (!event) continue;
            if (event.id) this.lastEventId = event.id;
            if (event.event === READY_EVENT) {
              everConnected = true;
              const ready = JSON.parse(event.data) as ReadyEventDto;
              silenceMs = Math.max(2 * ready.heartbeatMs, 1000);
              arm();
              this.setConnected(true);
            } else if (event.event === CHANGE_EVENT) {
              this.options.onChange(JSON.parse(event.data) as ChangeEventDto);
            } else if (event.event === RESYNC_EVENT) {
              this.options.onResync();
            }
          }
        }
      } catch {
        // Reconnect below.
      } finally {
        clearTimeout(watchdog);
      }
      this.setConnected(false);
      if (this.stopped) break;
      await new Promise((resolve) => setTimeout(resolve, this.options.retryMs ?? 1000));
    }
  }
}

function parseBlock(block: string): { id?: string; event: string; data: string } | undefined {
  let id: string | undefined;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return undefined;
  return { id, event, data: data.join('\n') };
}
