import type { APIGatewayProxyEvent } from 'aws-lambda';

/**
 * Reading API Gateway REST API proxy events (payload format 1.0) the same way everywhere.
 * In AWS, `path` is the path after the stage (`/v1/wallet`) and `requestContext.path` the one the
 * caller used (`/prod/v1/wallet`, or a custom domain's base path plus it); `resource` is the
 * matched resource (`/v1/wallet/sign/{operation}`).
 */
type EventParts = Pick<APIGatewayProxyEvent, 'httpMethod' | 'resource'>;

/** `POST /v2/api/wallet/sign_data`: method and resource, as functions/routes.ts writes route keys. */
export function routeOf(event: EventParts): string {
  return `${event.httpMethod} ${event.resource}`;
}

/**
 * The URL path a caller would use for `path` (a path of this same API): the caller's prefix (stage
 * or custom-domain base path) kept, so a redirect works however the API was reached.
 */
export function callerPath(event: Pick<APIGatewayProxyEvent, 'path' | 'requestContext'>, path: string): string {
  const seen = event.requestContext?.path ?? event.path;
  const prefix = seen.endsWith(event.path) ? seen.slice(0, seen.length - event.path.length) : '';
  return `${prefix}${path}`;
}

/** The query string as sent (every value of a repeated parameter), or '' when there is none. */
export function queryStringOf(event: Pick<APIGatewayProxyEvent, 'multiValueQueryStringParameters' | 'queryStringParameters'>): string {
  const params = new URLSearchParams();
  const multi = event.multiValueQueryStringParameters;
  if (multi) {
    for (const [name, values] of Object.entries(multi)) for (const value of values ?? []) params.append(name, value);
  } else {
    for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) if (value !== undefined) params.append(name, value);
  }
  return params.toString();
}
