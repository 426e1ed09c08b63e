import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';

/**
 * What API Gateway HTTP APIs do in front of a Lambda (payload format 2.0), for the local
 * runtime: route matching, the event shape, and turning the handler's result into a response.
 */
export interface Route {
  readonly routeKey: string;
  readonly method: string;
  readonly pattern: RegExp;
  readonly paramNames: readonly string[];
}

export function compileRoute(routeKey: string): Route {
  if (routeKey === '$default') return { routeKey, method: '*', pattern: /^/, paramNames: [] };
  const [method, path] = routeKey.split(' ') as [string, string];
  const paramNames: string[] = [];
  const source = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}+]+)\+?\}/g, (_m, name: string) => {
    paramNames.push(name);
    return '([^/]+)';
  });
  return { routeKey, method, pattern: new RegExp(`^${source}$`), paramNames };
}

/** Exact routes first, `$default` last, as API Gateway matches. */
export function matchRoute<R extends Route>(routes: readonly R[], method: string, path: string) {
  for (const route of routes) {
    if (route.routeKey === '$default' || route.method !== method) continue;
    const match = route.pattern.exec(path);
    if (match) {
      const pathParameters = Object.fromEntries(route.paramNames.map((name, i) => [name, safeDecode(match[i + 1]!)]));
      return { route, pathParameters };
    }
  }
  const fallback = routes.find((route) => route.routeKey === '$default');
  return fallback ? { route: fallback, pathParameters: {} } : undefined;
}

/** A malformed %-escape stays as sent (the handler's validation then refuses it) instead of a 500. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The path and query of a request target exactly as sent. Not `new URL(target, base)`: that reads
 * `//x/account` as host `x` and path `/account`, throws on `//`, and resolves `.`/`..` segments,
 * whereas API Gateway matches the path as sent (no collapsing of slashes), so those are 404s.
 */
export function requestTarget(rawUrl: string | undefined): { path: string; query: string } {
  const target = rawUrl || '/';
  const mark = target.indexOf('?');
  return mark === -1 ? { path: target, query: '' } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}

const TEXTUAL = /^(application\/(json|x-www-form-urlencoded|.*\+json)|text\/)/i;

/** An id in the shape API Gateway HTTP APIs give each request (`JXFxZjE0oAMEVaQ=`). */
export function gatewayRequestId(): string {
  return randomBytes(10).toString('base64');
}

export function toEvent(
  req: IncomingMessage,
  body: Buffer,
  routeKey: string,
  pathParameters: Record<string, string>,
  requestId: string = gatewayRequestId(),
): APIGatewayProxyEventV2 {
  const { path, query } = requestTarget(req.url);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const queryStringParameters: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(query)) {
    queryStringParameters[name] = name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value;
  }
  const textual = TEXTUAL.test(headers['content-type'] ?? '');
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: query,
    headers,
    queryStringParameters: Object.keys(queryStringParameters).length ? queryStringParameters : undefined,
    pathParameters: Object.keys(pathParameters).length ? pathParameters : undefined,
    body: body.length ? (textual ? body.toString('utf8') : body.toString('base64')) : undefined,
    isBase64Encoded: body.length > 0 && !textual,
    requestContext: {
      accountId: 'sandbox',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: req.method ?? 'GET',
        path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
  };
}

export function lambdaContext(functionName: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/**
 * What the Lambda runtime provides when one execution environment serves several invocations at
 * once (`AWS_LAMBDA_MAX_CONCURRENCY`, managed instances): an InvokeStore in
 * `globalThis.awslambda`, which Powertools uses to keep each invocation's log context, keys and
 * metrics apart. The local runtime serves concurrent requests in one process, so it installs the
 * same store, AWS's own multi-context implementation (@aws/lambda-invoke-store).
 */
export async function installInvokeStore(): Promise<void> {
  process.env.AWS_LAMBDA_MAX_CONCURRENCY ??= '64';
  await InvokeStore.getInstanceAsync(true);
}

/** Runs one invocation in its own InvokeStore context, as the Lambda runtime does. */
export function runInvocation<T>(context: Context, invoke: () => T): T {
  const store = globalThis.awslambda?.InvokeStore;
  return store ? store.run({ [InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID]: context.awsRequestId }, invoke) : invoke();
}

export function writeResult(res: ServerResponse, result: APIGatewayProxyStructuredResultV2 | string | undefined) {
  if (result === undefined || typeof result === 'string') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(result ?? '');
    return;
  }
  // setHeader (not writeHead's argument), so the access log can read them back.
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  if (result.cookies?.length) res.setHeader('set-cookie', result.cookies);
  const body = result.body === undefined ? '' : result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
  res.writeHead(result.statusCode ?? 200).end(body);
}
