import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiTags } from '@nestjs/swagger';
import { EventsQuerySchema, READY_EVENT, type ReadyEventDto } from '@tributary/shared';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { AnswerBytes, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { EventsService, type StreamEvent } from './events.service';

class EventsQueryDto extends createZodDto(EventsQuerySchema) {}

/** A comment line at least this often keeps proxies from closing an idle stream. */
export const HEARTBEAT_MS = 15_000;
/** What a client waits before reconnecting (the SSE `retry` field). */
const RETRY_MS = 1000;

@ApiTags('events')
@Controller('api/v1/events')
export class EventsController {
  constructor(private readonly events: EventsService) {}

  /**
   * Catalog changes at or below `path` as Server-Sent Events: `ready` first, then `change`
   * (ChangeEventDto) for each collection whose listing changed, here or by replication from a peer,
   * that the caller may read; `resync` (ResyncEventDto) when changes may have been missed. Send
   * `Last-Event-ID` when reconnecting to resume. A comment line every 15 s keeps the stream alive.
   */
  @Get()
  @AnswerBytes(200, ['text/event-stream'], 'An event stream that stays open')
  @Fails(404)
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this event id' })
  async stream(
    @CurrentPrincipal() principal: Principal,
    @Query() query: EventsQueryDto,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.events.authorize(principal, query.path);
    // Events may be ready before the headers are out (a replay after Last-Event-ID): held until then.
    let held: string[] | undefined = [];
    const write = (text: string): void => {
      if (held) held.push(text);
      else if (!res.writableEnded) res.write(text);
    };
    const send = (event: StreamEvent): void =>
      write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`);
    const heartbeat = setInterval(() => write(`: heartbeat ${new Date().toISOString()}\n\n`), HEARTBEAT_MS);
    let unsubscribe = (): void => undefined;
    const end = (): void => {
      clearInterval(heartbeat);
      unsubscribe();
      if (!res.writableEnded) res.end();
    };
    const lastEventId = req.headers['last-event-id'];
    // Subscribed (listening) before `ready` goes out, so a change made after `ready` is delivered.
    try {
      unsubscribe = await this.events.subscribe(
        { principal, path: query.path, send, close: end },
        typeof lastEventId === 'string' ? lastEventId : undefined,
      );
    } catch (err) {
      clearInterval(heartbeat);
      throw err;
    }
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    req.socket.setNoDelay(true);
    req.socket.setTimeout(0);
    const ready: ReadyEventDto = { path: query.path, heartbeatMs: HEARTBEAT_MS };
    res.write(`retry: ${RETRY_MS}\nevent: ${READY_EVENT}\ndata: ${JSON.stringify(ready)}\n\n`);
    for (const text of held) res.write(text);
    held = undefined;
    req.on('close', end);
    res.on('close', end);
  }
}
