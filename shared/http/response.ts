import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** What an adapter returns: an API Gateway HTTP API (payload 2.0) result. */
export type HttpResult = APIGatewayProxyStructuredResultV2;

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
