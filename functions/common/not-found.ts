import type { APIGatewayProxyEvent } from 'aws-lambda';
import { NotFoundError } from '../../shared/errors.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { withHead } from '../../shared/http/methods.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { currentServiceName } from '../../shared/observability/service-name.ts';
import { ROUTES, type ServiceName } from '../routes.ts';

/**
 * The `$default` route: the `ANY` method of every resource of a service's REST API
 * (infra/api-resources.ts). A resource that has routes answers another method with 405 and
 * `Allow` (HEAD listed wherever GET is); any other path (a path prefix, a `{proxy+}` catch-all) is
 * 404, which names the service that does serve the path when another one does (`POST /account`
 * sent to the express service's port).
 */
export const adapter = async (event: APIGatewayProxyEvent) => {
  const service = currentServiceName();
  const allowed = withHead(
    ROUTES.filter((route) => route.service === service && route.routeKey.endsWith(` ${event.resource}`)).map((route) => methodOf(route.routeKey)),
  );
  if (allowed.length === 0) throw new NotFoundError('ROUTE_NOT_FOUND', notFoundMessage(service, event));
  return jsonResponse(
    405,
    { success: false, error: { code: 'METHOD_NOT_ALLOWED', message: `${event.httpMethod} is not allowed here: use ${allowed.join(', ')}` } },
    { allow: allowed.join(', ') },
  );
};

const SERVICE_TITLES: Readonly<Record<ServiceName, string>> = { account: 'account service', enclave: 'wallet enclave', express: 'express wallet service' };

/**
 * Stage variables naming each service's base URL (`account_url`, `enclave_url`, `express_url`),
 * where the stage has them: the local sandbox sets them (infra/local/runtime.ts); a deployment sets
 * none, and the message then names the service without a URL.
 */
const urlOf = (event: APIGatewayProxyEvent, service: ServiceName): string | undefined => {
  const url = event.stageVariables?.[`${service}_url`];
  return url && /^https?:\/\/[^\s]+$/.test(url) ? url : undefined;
};

function notFoundMessage(service: string, event: APIGatewayProxyEvent): string {
  const plain = `No route for ${event.httpMethod} ${event.path}`;
  const owner = otherServiceOf(service, event.path);
  if (!owner) return plain;
  const url = urlOf(event, owner.service);
  const here = SERVICE_TITLES[service as ServiceName] ?? 'this service';
  return `${plain} on the ${here}: ${event.path} is an ${owner.service}-service route (${owner.methods.join(', ')}); send it to the ${SERVICE_TITLES[owner.service]}${url ? ` at ${url}` : "'s URL"}`;
}

/** Another service with a route at exactly this path (`{name}` matching one non-empty segment), and its methods there. */
export function otherServiceOf(service: string, path: string): { service: ServiceName; methods: string[] } | undefined {
  const segments = path.split('/');
  const matching = ROUTES.filter((route) => {
    if (route.service === service || route.routeKey === '$default') return false;
    const [, pathTemplate] = route.routeKey.split(' ');
    if (pathTemplate === undefined) return false; // no path: `$default` only, excluded above
    const template = pathTemplate.split('/');
    return template.length === segments.length && template.every((part, i) => (part.startsWith('{') ? segments[i] !== '' : part === segments[i]));
  });
  const owner = matching[0]?.service;
  if (!owner) return undefined;
  return { service: owner, methods: withHead(matching.filter((route) => route.service === owner).map((route) => methodOf(route.routeKey))) };
}

/** The method of a route key (`GET /account` → `GET`; split always yields a first part, so the default is never used). */
function methodOf(routeKey: string): string {
  return routeKey.split(' ')[0] ?? '';
}

export const handler = httpHandler(adapter);
