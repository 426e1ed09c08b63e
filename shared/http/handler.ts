import middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { errorHandler } from './error-handler.ts';
import { observability } from './observability.ts';

export type HttpResult = APIGatewayProxyStructuredResultV2;
export type HttpAdapter<E = APIGatewayProxyEventV2> = (event: E, context: Context) => Promise<HttpResult>;

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}

/**
 * Wraps an adapter for Lambda: logging context, metrics and `X-Request-Id` always; JSON error
 * mapping always; JSON body parsing when the route takes a body (the parser then requires
 * `Content-Type: application/json`).
 */
export function httpHandler(adapter: HttpAdapter<any>, options: { jsonBody?: boolean } = {}) {
  const wrapped = middy(adapter);
  // First, so its after/onError runs last and sees the final response (middy runs them in reverse).
  wrapped.use(observability());
  if (options.jsonBody) wrapped.use(httpJsonBodyParser());
  // Registered last so its onError runs first.
  wrapped.use(errorHandler());
  return wrapped;
}
