import { Logger, type ArgumentsHost } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DomainError } from './domain-error';
import { AllExceptionsFilter } from './exception.filter';

function answer(exception: unknown): { status: number; body: unknown } {
  const res = {
    headersSent: false,
    statusCode: 0,
    body: undefined as unknown,
    setHeader: () => undefined,
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    json(body: unknown) {
      this.body = body;
      return this;
    },
  };
  const req = { method: 'GET', path: '/api/v1/data' };
  const host = {
    switchToHttp: () => ({ getResponse: () => res, getRequest: () => req }),
  } as unknown as ArgumentsHost;
  new AllExceptionsFilter().catch(exception, host);
  return { status: res.statusCode, body: res.body };
}

describe('AllExceptionsFilter logging', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('logs an expected 5xx domain error (503 REPLICA_UNAVAILABLE) at warn, without a stack', () => {
    const error = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { status } = answer(
      new DomainError(ErrorCode.ReplicaUnavailable, 'the site holding the bytes (uno) does not answer'),
    );
    expect(status).toBe(503);
    expect(error).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledTimes(1);
    const args = warn.mock.calls[0]!;
    expect(args).toHaveLength(1);
    expect(JSON.stringify(args[0])).toContain('REPLICA_UNAVAILABLE');
    expect(JSON.stringify(args)).not.toMatch(/\n\s+at /);
  });

  it('logs an unexpected error at error, with its stack, and answers 500', () => {
    const error = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { status } = answer(new TypeError('boom'));
    expect(status).toBe(500);
    expect(warn).not.toHaveBeenCalled();
    expect(error).toHaveBeenCalledTimes(1);
    expect(String(error.mock.calls[0]![1])).toMatch(/TypeError: boom\n\s+at /);
  });

  it('does not log client errors', () => {
    const error = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    expect(answer(new DomainError(ErrorCode.NotFound, 'x does not exist')).status).toBe(404);
    expect(error).not.toHaveBeenCalled();
    expect(warn).not.toHaveBeenCalled();
  });
});
