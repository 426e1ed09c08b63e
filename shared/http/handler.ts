import middy from '@middy/core';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { errorHandler } from './error-handler.ts';
import { jsonBodyParser } from './json-body.ts';
import type { HttpResult } from './response.ts';

export type HttpAdapter<E = APIGatewayProxyEventV2> = (event: E, context: Context) => Promise<HttpResult>;

/**
 * Wraps an adapter for Lambda: JSON error mapping always; JSON body parsing when the route
 * takes a body (the parser then requires `Content-Type: application/json`).
 */
export function httpHandler(adapter: HttpAdapter<any>, options: { jsonBody?: boolean } = {}) {
  const wrapped = middy(adapter);
  if (options.jsonBody) wrapped.use(jsonBodyParser());
  // Registered last so its onError runs first (middy runs onError in reverse order).
  wrapped.use(errorHandler());
  return wrapped;
}
