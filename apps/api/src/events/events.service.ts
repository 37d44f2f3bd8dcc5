import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { isWithin, splitPath, type ChangeEventDto, type ResyncEventDto } from '@tributary/shared';
import type pg from 'pg';
import { AccessService, levelAtLeast } from '../access/access.service';
import type { Principal } from '../common/principal';
import { NoticeListener } from '../database/notice-listener';
import { DATABASE_CONNECTION } from '../database/sql-pool';

/** The channel the catalog triggers notify (prisma/functions/030_notifications.sql). */
export const CATALOG_CHANNEL = 'tributary_catalog';
/** Events kept for streams that reconnect with Last-Event-ID. */
const HISTORY = 2000;
/** How long a subscriber's answer to "may I read this collection" is reused. */
const ACCESS_CACHE_MS = 5000;

/** What the trigger sends (see the migration for the format). */
interface Notice {
  k: 'c' | 'o';
  op?: 'i' | 'u' | 'd';
  p?: string[];
  s?: string[];
  o?: string | null;
  t: number;
  r?: 1;
}

export type StreamEvent =
  { type: 'change'; id: string; data: ChangeEventDto } | { type: 'resync'; id: string; data: ResyncEventDto };

export interface Subscriber {
  principal: Principal;
  /** The subtree the subscriber asked for. */
  path: string;
  send(event: StreamEvent): void;
  /** Ends the stream (the site is shutting down). */
  close(): void;
}

interface SubscriberState extends Subscriber {
  access: Map<string, { ok: boolean; until: number }>;
  /** Deliveries run in order, one at a time (each may wait for an access check). */
  queue: Promise<void>;
}

const OPS = { i: 'create', u: 'update', d: 'delete' } as const;

/**
 * Streams catalog changes to clients. One dedicated PostgreSQL connection LISTENs to the catalog
 * triggers' notices (started with the first subscriber); each notice becomes change events, one
 * per collection path, numbered `<epoch>:<seq>` (the epoch changes with every process and every
 * new listening connection, so an id from before a restart or a lost connection is recognised and
 * answered with a resync). Every subscriber gets the events inside its subtree on collections it
 * may read (its token's confinement included), checked here per path.
 */
@Injectable()
export class EventsService implements OnModuleDestroy {
  private readonly logger = new Logger('Events');
  private readonly subscribers = new Set<SubscriberState>();
  private readonly history: StreamEvent[] = [];
  private epoch = randomBytes(4).toString('hex');
  private seq = 0;
  private readonly listener: NoticeListener;

  constructor(
    @Inject(DATABASE_CONNECTION) connection: pg.ClientConfig,
    private readonly access: AccessService,
  ) {
    this.listener = new NoticeListener({
      connection,
      channel: CATALOG_CHANNEL,
      name: 'tributary-events',
      logger: this.logger,
      whileLost: 'reconnecting',
      onNotice: (payload) => this.onNotice(payload),
      onLost: () => this.restartIds(),
    });
  }

  /** Checks that the caller may read `path`; throws the access error otherwise. */
  async authorize(principal: Principal, path: string): Promise<void> {
    await this.access.require(principal, { path, kind: 'collection' }, 'read');
  }

  /**
   * Adds a subscriber once the listener runs. With `lastEventId`, replays what it missed when this
   * process still holds it, or sends a resync. Returns the function that removes it.
   */
  async subscribe(subscriber: Subscriber, lastEventId?: string): Promise<() => void> {
    await this.listener.start();
    const state: SubscriberState = { ...subscriber, access: new Map(), queue: Promise.resolve() };
    this.subscribers.add(state);
    if (lastEventId !== undefined && lastEventId !== '') {
      const missed = this.since(lastEventId);
      if (missed === undefined) this.deliver(state, this.resync('unknown-last-event-id', false));
      else for (const event of missed) this.deliver(state, event);
    }
    return () => this.subscribers.delete(state);
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  async onModuleDestroy(): Promise<void> {
    await this.listener.close();
    for (const subscriber of this.subscribers) subscriber.close();
    this.subscribers.clear();
  }

  /** The listening connection broke: notices may be lost; tell everyone. */
  private restartIds(): void {
    // Ids from the old connection must not resume on the new one.
    this.epoch = randomBytes(4).toString('hex');
    this.seq = 0;
    this.history.length = 0;
    this.broadcast(this.resync('listener-restarted', true));
  }

  // ---- events ----

  private onNotice(payload: string): void {
    if (!payload) return;
    let notice: Notice;
    try {
      notice = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    const at = new Date(notice.t ?? Date.now()).toISOString();
    if (notice.r) {
      this.broadcast(this.resync('too-many-changes', true, at));
      return;
    }
    const kind = notice.k === 'c' ? 'collection' : 'object';
    const op = OPS[notice.op ?? 'u'];
    const origin = notice.o ?? null;
    const entries: { path: string; subtree: boolean }[] = [
      ...(notice.p ?? []).map((path) => ({ path, subtree: false })),
      ...(notice.s ?? []).map((path) => ({ path, subtree: true })),
    ];
    const seen = new Set<string>();
    for (const { path, subtree } of entries) {
      const key = `${subtree}:${path}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const parentPath = kind === 'object' || path === '/' ? path : splitPath(path).parent;
      const event: StreamEvent = {
        type: 'change',
        id: this.nextId(),
        data: { kind, op, path, parentPath, subtree, origin, at },
      };
      this.remember(event);
      this.broadcast(event);
    }
  }

  private resync(
    reason: ResyncEventDto['reason'],
    remember: boolean,
    at = new Date().toISOString(),
  ): StreamEvent {
    const event: StreamEvent = { type: 'resync', id: this.nextId(), data: { reason, at } };
    if (remember) this.remember(event);
    return event;
  }

  private nextId(): string {
    return `${this.epoch}:${++this.seq}`;
  }

  private remember(event: StreamEvent): void {
    this.history.push(event);
    if (this.history.length > HISTORY) this.history.splice(0, this.history.length - HISTORY);
  }

  /** Events after `id`, or undefined when this process cannot tell what came after it. */
  private since(id: string): StreamEvent[] | undefined {
    const [epoch, seqText] = id.split(':');
    const seq = Number(seqText);
    if (epoch !== this.epoch || !Number.isSafeInteger(seq) || seq > this.seq) return undefined;
    const first = this.history[0];
    const firstSeq = first ? Number(first.id.split(':')[1]) : this.seq + 1;
    // The events right after `id` must still be held.
    if (seq + 1 < firstSeq) return undefined;
    return this.history.filter((e) => Number(e.id.split(':')[1]) > seq);
  }

  private broadcast(event: StreamEvent): void {
    for (const subscriber of this.subscribers) this.deliver(subscriber, event);
  }

  private deliver(subscriber: SubscriberState, event: StreamEvent): void {
    subscriber.queue = subscriber.queue
      .then(async () => {
        if (event.type === 'resync' || (await this.visible(subscriber, event.data))) subscriber.send(event);
      })
      .catch((err: unknown) => this.logger.warn(`event delivery failed: ${(err as Error).message}`));
  }

  /**
   * A change is for a subscriber when it lies in the subscriber's subtree (or moves the subtree
   * itself) and the subscriber may read the listing that changed.
   */
  private async visible(subscriber: SubscriberState, change: ChangeEventDto): Promise<boolean> {
    const inside =
      isWithin(change.parentPath, subscriber.path) ||
      isWithin(change.path, subscriber.path) ||
      (change.subtree && isWithin(subscriber.path, change.path));
    if (!inside) return false;
    // A change above the subscriber's subtree (its root moved) is checked on the subtree itself.
    const listing = isWithin(change.parentPath, subscriber.path) ? change.parentPath : subscriber.path;
    const now = Date.now();
    const cached = subscriber.access.get(listing);
    if (cached && cached.until > now) return cached.ok;
    const level = await this.access.levelOf(subscriber.principal, { path: listing, kind: 'collection' });
    const ok = levelAtLeast(level, 'read');
    subscriber.access.set(listing, { ok, until: now + ACCESS_CACHE_MS });
    return ok;
  }
}
