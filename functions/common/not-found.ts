import type { APIGatewayProxyEvent } from 'aws-lambda';
import { NotFoundError } from '../../shared/errors.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { withHead } from '../../shared/http/methods.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { currentServiceName } from '../../shared/observability/service-name.ts';
import { ROUTES } from '../routes.ts';

/**
 * The `$default` route: the `ANY` method of every resource of a service's REST API
 * (infra/api-resources.ts). A resource that has routes answers another method with 405 and
 * `Allow` (HEAD listed wherever GET is); any other path (a path prefix, a `{proxy+}` catch-all) is 404.
 */
export const adapter = async (event: APIGatewayProxyEvent) => {
  const service = currentServiceName();
  const allowed = withHead(ROUTES.filter((route) => route.service === service && route.routeKey.endsWith(` ${event.resource}`)).map((route) => route.routeKey.split(' ')[0]!));
  if (allowed.length === 0) throw new NotFoundError('ROUTE_NOT_FOUND', `No route for ${event.httpMethod} ${event.path}`);
  return jsonResponse(
    405,
    { success: false, error: { code: 'METHOD_NOT_ALLOWED', message: `${event.httpMethod} is not allowed here: use ${allowed.join(', ')}` } },
    { allow: allowed.join(', ') },
  );
};

export const handler = httpHandler(adapter);
