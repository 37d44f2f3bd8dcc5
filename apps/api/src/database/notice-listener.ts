import type { Logger } from '@nestjs/common';
import pg from 'pg';

const RECONNECT_MS = 1_000;

export interface NoticeListenerOptions {
  connection: pg.ClientConfig;
  /** The channel the catalog's triggers notify. */
  channel: string;
  /** The connection's application_name, so it can be told apart in pg_stat_activity. */
  name: string;
  logger: Logger;
  /** What a lost connection means for the owner, for the warning (e.g. "reconnecting"). */
  whileLost: string;
  onNotice(payload: string): void;
  /** Listening (again): notices from now on arrive; any sent while not listening were missed. */
  onListening?(): void;
  /** The connection broke: notices may be missed until `onListening`. */
  onLost?(): void;
}

/**
 * One dedicated PostgreSQL connection that LISTENs on a channel, reconnecting by itself once started.
 * Notices are not queued for a connection that is down, so the owner must treat the time between
 * `onLost` and `onListening` as blind.
 */
export class NoticeListener {
  private client: pg.Client | undefined;
  private starting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: NoticeListenerOptions) {
    // Channels are the code's own constants; LISTEN takes no parameters.
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new Error(`bad channel name ${options.channel}`);
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Listens (once, however many call it); on failure rejects and keeps trying in the background. */
  start(): Promise<void> {
    if (this.client || this.closed) return Promise.resolve();
    this.starting ??= this.connect()
      .catch((err: unknown) => {
        this.retryLater(err);
        throw err;
      })
      .finally(() => (this.starting = undefined));
    return this.starting;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const { connection, channel, name } = this.options;
    const client = new pg.Client({ ...connection, application_name: name });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel === channel && msg.payload !== undefined) this.options.onNotice(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.options.onListening?.();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.options.onLost?.();
    this.retryLater(err);
  }

  private retryLater(err?: unknown): void {
    if (this.closed) return;
    const reason = err instanceof Error ? err.message : 'connection ended';
    this.options.logger.warn(`${this.options.channel} notices: ${reason}; ${this.options.whileLost}`);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      if (this.closed || this.client) return;
      this.start().catch(() => undefined);
    }, RECONNECT_MS);
  }
}
