import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { DomainError } from '../errors.ts';
import { errorHandler } from './error-handler.ts';
import { observability } from './observability.ts';
import type { HttpResult } from './response.ts';

/** What every handler receives: API Gateway REST API Lambda proxy events (payload format 1.0). */
export type HttpEvent = APIGatewayProxyEvent;
export type HttpAdapter<E = HttpEvent> = (event: E, context: Context) => Promise<HttpResult>;

/**
 * The largest request body a route takes. Far above any of our bodies (the largest, EIP-712 typed
 * data to sign, is a few KiB) and far below what API Gateway REST APIs (10 MB) and synchronous
 * Lambda invocations (6 MB) let through, so an oversized body is refused before it is parsed.
 */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * Wraps an adapter for Lambda: header names lower-cased (REST APIs pass them as the caller sent
 * them); logging context, metrics and `X-Request-Id` always; JSON error mapping always; the body
 * size limit and JSON body parsing when the route takes a body (the parser then requires
 * `Content-Type: application/json`).
 */
export function httpHandler<E>(adapter: HttpAdapter<E>, options: { jsonBody?: boolean } = {}) {
  const wrapped = middy(adapter);
  // Before observability, which reads X-Request-Id; it has no after/onError, so observability's
  // still run last (middy runs them in reverse) and see the final response.
  wrapped.use(httpHeaderNormalizer());
  wrapped.use(observability());
  if (options.jsonBody) wrapped.use(bodyLimit()).use(httpJsonBodyParser());
  // Registered last so its onError runs first.
  wrapped.use(errorHandler());
  return wrapped;
}

function bodyLimit(): middy.MiddlewareObj<HttpEvent> {
  return {
    before: ({ event }) => {
      if (typeof event.body !== 'string') return;
      const bytes = event.isBase64Encoded ? Math.floor((event.body.length * 3) / 4) : Buffer.byteLength(event.body, 'utf8');
      if (bytes > MAX_BODY_BYTES) throw new DomainError(413, 'PAYLOAD_TOO_LARGE', `Request body exceeds ${MAX_BODY_BYTES / 1024} KiB`);
    },
  };
}
