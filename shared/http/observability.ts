import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { serviceLogger } from '../logger.ts';
import { serviceMetrics } from '../observability/metrics.ts';
import { currentServiceName } from '../observability/service-name.ts';
import { routeOf } from './event.ts';
import { REQUEST_ID_HEADER, REQUEST_ID_KEY, requestIdOf } from './request-id.ts';

type Request = middy.Request<APIGatewayProxyEvent, APIGatewayProxyResult | undefined, Error, Context>;
/** What Powertools' middlewares are (both factories return the same shape). */
type Middleware = ReturnType<typeof injectLambdaContext>;

/** Powertools' own middlewares, made once per service (once per process in Lambda). */
const perService = new Map<string, { logging: Middleware; metrics: Middleware }>();

function powertools(serviceName: string) {
  let found = perService.get(serviceName);
  if (!found) {
    found = {
      // The event is never logged: it carries the caller's headers and body.
      logging: injectLambdaContext(serviceLogger(serviceName), { resetKeys: true, logEvent: false }),
      metrics: logMetrics(serviceMetrics(serviceName), { captureColdStartMetric: true }),
    };
    perService.set(serviceName, found);
  }
  return found;
}

/**
 * Request context for every function: the Lambda context, cold start and `request_id` in each log
 * line; metrics flushed after each invocation; `X-Request-Id` on every response, error or not;
 * one "request handled" line with route, status and duration (never headers or body).
 */
export function observability(): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult | undefined, Error, Context> {
  const started = new WeakMap<object, { at: number; requestId: string; serviceName: string }>();

  const finish = async (request: Request, phase: 'after' | 'onError') => {
    const state = started.get(request);
    if (!state) return;
    const response = request.response;
    if (response && typeof response === 'object') response.headers = { ...response.headers, [REQUEST_ID_HEADER]: state.requestId };
    const status = response?.statusCode ?? 500;
    serviceLogger(state.serviceName).info('request handled', {
      route: request.event?.httpMethod ? routeOf(request.event) : undefined,
      status,
      duration_ms: Math.round((performance.now() - state.at) * 10) / 10,
      ...(status >= 400 ? { error_code: errorCodeOf(response?.body) } : {}),
    });
    const { logging, metrics } = powertools(state.serviceName);
    await metrics[phase]?.(request);
    await logging[phase]?.(request);
  };

  return {
    before: async (request) => {
      const serviceName = currentServiceName();
      const requestId = requestIdOf(request.event, request.context);
      started.set(request, { at: performance.now(), requestId, serviceName });
      request.internal = { ...request.internal, [REQUEST_ID_KEY]: requestId };
      const { logging, metrics } = powertools(serviceName);
      await logging.before?.(request);
      await metrics.before?.(request);
      serviceLogger(serviceName).appendKeys({ request_id: requestId });
    },
    after: (request) => finish(request, 'after'),
    onError: (request) => finish(request, 'onError'),
  };
}

/** The `error.code` of a JSON error body, for the log (the message may echo caller input). */
function errorCodeOf(body: string | undefined): string | undefined {
  try {
    const code = (JSON.parse(body ?? '') as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
