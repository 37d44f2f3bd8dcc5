import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import { ErrorBody, ErrorCode } from '@tributary/shared';
import type { Request, Response } from 'express';
import { ZodValidationException } from 'nestjs-zod';
import { ZodError } from 'zod';
import { DomainError } from './domain-error';

/**
 * Maps every error to the one error envelope. Unknown errors are logged (with their stack) and answered
 * with 500; domain errors with a 5xx status are logged as warnings.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request>();
    const { status, body, headers } = this.toBody(exception, req);
    if (exception instanceof DomainError && status >= 500) {
      // An expected failure with its own code (a holding site down: 503 REPLICA_UNAVAILABLE) is not
      // a bug: worth a warning, not an error with a stack trace.
      this.logger.warn({
        msg: 'request failed',
        method: req.method,
        path: req.path,
        code: exception.code,
        err: exception.message,
      });
    } else if (status >= 500) {
      this.logger.error(
        { msg: 'request failed', method: req.method, path: req.path, err: String(exception) },
        exception instanceof Error ? exception.stack : undefined,
      );
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [k, v] of Object.entries(headers ?? {})) res.setHeader(k, v);
    res.status(status).json(body);
  }

  private toBody(
    exception: unknown,
    req: Request,
  ): { status: number; body: ErrorBody; headers?: Record<string, string> } {
    if (exception instanceof DomainError) {
      return {
        status: exception.status,
        headers: exception.headers,
        body: { error: { code: exception.code, message: exception.message, details: exception.details } },
      };
    }
    if (exception instanceof ZodValidationException) {
      const zodError = exception.getZodError();
      const details = zodError instanceof ZodError ? fieldErrors(zodError) : {};
      const summary = Object.entries(details)
        .map(([k, v]) => `${k}: ${v.join(', ')}`)
        .join('; ');
      return {
        status: 422,
        body: { error: { code: ErrorCode.ValidationFailed, message: `invalid input: ${summary}`, details } },
      };
    }
    if (exception instanceof ThrottlerException) {
      return {
        status: 429,
        body: {
          error: { code: ErrorCode.RateLimited, message: 'too many attempts; wait a minute and try again' },
        },
      };
    }
    const bodyError = bodyParserError(exception);
    if (bodyError) return bodyError;
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = httpCode(status);
      const message =
        status === 404
          ? `no route ${req.method} ${req.path}; see /api/docs`
          : status === 413
            ? 'the request body is too large'
            : status === 400
              ? `malformed request: ${exception.message}`
              : exception.message;
      return { status, body: { error: { code, message } } };
    }
    return {
      status: 500,
      body: { error: { code: ErrorCode.Internal, message: 'internal error; it has been logged' } },
    };
  }
}

/**
 * Errors of express's body parser and its decompression (http-errors with a 4xx `status`), which
 * never reach Nest as HttpExceptions: they are the client's, never a 500.
 */
function bodyParserError(exception: unknown): { status: number; body: ErrorBody } | null {
  if (typeof exception !== 'object' || exception === null || exception instanceof HttpException) return null;
  const { type, status, statusCode } = exception as {
    type?: unknown;
    status?: unknown;
    statusCode?: unknown;
  };
  const code = typeof status === 'number' ? status : typeof statusCode === 'number' ? statusCode : undefined;
  if (code === undefined || code < 400 || code >= 500) return null;
  if (type === 'entity.too.large') {
    return {
      status: 413,
      body: { error: { code: ErrorCode.PayloadTooLarge, message: 'the JSON body is larger than 1 MB' } },
    };
  }
  return {
    status: code === 415 ? 415 : 400,
    body: {
      error: {
        code: ErrorCode.ValidationFailed,
        message: `malformed request body${typeof type === 'string' ? ` (${type})` : ''}`,
      },
    },
  };
}

function httpCode(status: number): ErrorCode {
  switch (status) {
    case 400:
      return ErrorCode.ValidationFailed;
    case 401:
      return ErrorCode.Unauthenticated;
    case 403:
      return ErrorCode.PermissionDenied;
    case 404:
      return ErrorCode.RouteNotFound;
    case 413:
      return ErrorCode.PayloadTooLarge;
    case 429:
      return ErrorCode.RateLimited;
    default:
      return status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed;
  }
}

export function fieldErrors(error: ZodError): Record<string, string[]> {
  const details: Record<string, string[]> = {};
  for (const issue of error.issues) {
    const key = issue.path.length ? issue.path.join('.') : '(body)';
    (details[key] ??= []).push(issue.message);
  }
  return details;
}
