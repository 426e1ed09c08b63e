import type { APIGatewayProxyEvent, Context } from 'aws-lambda';

export const REQUEST_ID_HEADER = 'x-request-id';
/** Where `observability()` leaves the id for later middlewares (middy's `request.internal`). */
export const REQUEST_ID_KEY = 'requestId';
export const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * The id a caller can quote: a well-formed incoming `X-Request-Id` (so a client's or proxy's id
 * carries through), else API Gateway's request id, else Lambda's. It is sent back in the
 * `X-Request-Id` header of every response, in 500 bodies, and in every log line as `request_id`.
 */
export function requestIdOf(event: Partial<APIGatewayProxyEvent> | undefined, context: Partial<Context> | undefined): string {
  const incoming = event?.headers?.[REQUEST_ID_HEADER];
  if (incoming && VALID_REQUEST_ID.test(incoming)) return incoming;
  return event?.requestContext?.requestId || context?.awsRequestId || crypto.randomUUID();
}
