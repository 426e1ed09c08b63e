import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { NotFoundError } from '../../shared/errors.ts';
import { httpHandler } from '../../shared/http/handler.ts';

/** API Gateway `$default` route: unknown paths and methods get the JSON error shape. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  throw new NotFoundError('ROUTE_NOT_FOUND', `No route for ${event.requestContext.http.method} ${event.rawPath}`);
};

export const handler = httpHandler(adapter);
