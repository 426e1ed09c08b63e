import middy from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { errorHandler } from './error-handler.ts';
import { observability } from './observability.ts';
import type { HttpResult } from './response.ts';

export type HttpAdapter<E = APIGatewayProxyEventV2> = (event: E, context: Context) => Promise<HttpResult>;

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
