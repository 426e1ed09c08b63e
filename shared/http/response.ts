import type { APIGatewayProxyResult } from 'aws-lambda';

/** What an adapter returns: an API Gateway REST API Lambda proxy result. */
export type HttpResult = APIGatewayProxyResult;

export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
