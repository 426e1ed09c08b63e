import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { withServiceName } from '../../shared/observability/service-name.ts';
import { runAsFunction } from './iam/principal.ts';

/**
 * What API Gateway REST APIs do in front of a Lambda (proxy integration, payload format 1.0), for
 * the local runtime: the event shape, and turning the handler's result into a response. Route
 * matching is infra/api-resources.ts, the same tree CDK deploys.
 */

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

/** An id in the shape API Gateway gives each request (a UUID for REST APIs). */
export function gatewayRequestId(): string {
  return randomUUID();
}

/** The stage name the local runtime reports (its URLs carry no stage prefix, like a custom domain's root mapping). */
export const LOCAL_STAGE = 'local';

export interface MatchedResource {
  /** The matched resource (`/v1/wallet/sign/{operation}`, `/{proxy+}`). */
  readonly resource: string;
  readonly pathParameters: Readonly<Record<string, string>>;
}

/**
 * A REST API proxy event as API Gateway builds it: header names as the caller sent them, the last
 * value of a repeated header or query parameter in `headers`/`queryStringParameters` and all of
 * them in the `multiValue…` twins, `null` for each absent part, the body as UTF-8 text (no binary
 * media types are configured, so it is never base64). `stageVariables`: the stage's, if it has any.
 */
export function toEvent(
  req: IncomingMessage,
  body: Buffer,
  matched: MatchedResource,
  requestId: string = gatewayRequestId(),
  stageVariables: Readonly<Record<string, string>> | null = null,
): APIGatewayProxyEvent {
  const { path, query } = requestTarget(req.url);
  const raw = req.rawHeaders ?? [];
  const headerPairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) headerPairs.push([raw[i]!, raw[i + 1]!]);
  const { single: headers, multi: multiValueHeaders } = grouped(headerPairs);
  const { single: queryStringParameters, multi: multiValueQueryStringParameters } = grouped(new URLSearchParams(query));
  const hasHeaders = raw.length > 0;
  const hasQuery = Object.keys(queryStringParameters).length > 0;
  const method = req.method ?? 'GET';
  const now = new Date();
  const header = (name: string) => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return {
    resource: matched.resource,
    path,
    httpMethod: method,
    headers: hasHeaders ? headers : (null as never),
    multiValueHeaders: hasHeaders ? multiValueHeaders : (null as never),
    queryStringParameters: hasQuery ? queryStringParameters : null,
    multiValueQueryStringParameters: hasQuery ? multiValueQueryStringParameters : null,
    pathParameters: Object.keys(matched.pathParameters).length ? { ...matched.pathParameters } : null,
    stageVariables: stageVariables ? { ...stageVariables } : null,
    body: body.length ? body.toString('utf8') : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      resourceId: 'local',
      resourcePath: matched.resource,
      httpMethod: method,
      path,
      stage: LOCAL_STAGE,
      protocol: `HTTP/${req.httpVersion}`,
      domainName: header('host') ?? 'localhost',
      domainPrefix: 'localhost',
      requestId,
      extendedRequestId: requestId,
      requestTime: accessLogTime(now),
      requestTimeEpoch: now.getTime(),
      authorizer: null,
      identity: {
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: header('user-agent') ?? null,
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        user: null,
        userArn: null,
      },
    },
  };
}

/**
 * Names and values as API Gateway groups them: the last value of each name, and all of them. A
 * name is the caller's text (`__proto__`, `constructor`, `toString`): grouped in a Map and made
 * own properties by Object.fromEntries, as the JSON.parse of a Lambda event makes them, so it
 * neither finds nor replaces an Object.prototype member.
 */
function grouped(pairs: Iterable<[string, string]>): { single: Record<string, string>; multi: Record<string, string[]> } {
  const byName = new Map<string, string[]>();
  for (const [name, value] of pairs) {
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  return {
    single: Object.fromEntries([...byName].map(([name, values]) => [name, values.at(-1)!])),
    multi: Object.fromEntries(byName),
  };
}

/** `22/Nov/2026:10:40:14 +0000`, API Gateway's `requestTime`. */
function accessLogTime(date: Date): string {
  const [, day, month, year, time] = /^\w+, (\d+) (\w+) (\d+) (\S+)/.exec(date.toUTCString())!;
  return `${day!.padStart(2, '0')}/${month}/${year}:${time} +0000`;
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

/**
 * Runs one invocation in its own InvokeStore context, as the Lambda runtime does, and as its
 * function's principal (infra/local/iam/principal.ts: what the sandbox authorises its AWS calls as).
 */
export function runInvocation<T>(context: Context, invoke: () => T): T {
  const store = globalThis.awslambda?.InvokeStore;
  const asFunction = () => runAsFunction(context.functionName, invoke);
  return store ? store.run({ [InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID]: context.awsRequestId }, asFunction) : asFunction();
}

/**
 * A Lambda module of this repository (`entry`, relative to the root; it exports `handler`) as the
 * local runtime invokes it outside API Gateway (the transfer machine's steps, the event source
 * mappings): imported once, each invocation in its own Lambda context under the account service's
 * name, as its function runs in AWS.
 */
export async function loadLocalLambda<E, R>(entry: string, functionId: string, timeoutMs: number): Promise<(event: E) => Promise<R>> {
  const module = (await import(pathToFileURL(join(ROOT, entry)).href)) as { handler: (event: E, context: Context) => Promise<R> };
  return (event: E) => {
    const context = lambdaContext(functionId, timeoutMs);
    return withServiceName('account', () => runInvocation(context, () => module.handler(event, context)));
  };
}

const ROOT = resolve(import.meta.dirname, '../..');

/** Lambda's synchronous invocation payload limit, each way (Lambda quotas: 6 MB), as its error message counts it. */
export const LAMBDA_MAX_PAYLOAD_BYTES = 6_291_556;

/** What Lambda gives API Gateway for one invocation: the function's result, or an invocation error API Gateway answers 502 for. */
export type InvocationOutcome =
  | { readonly kind: 'result'; readonly result: unknown }
  | { readonly kind: 'timed-out'; readonly log: string }
  | { readonly kind: 'payload-too-large'; readonly log: string };

/**
 * One synchronous invocation under Lambda's limits (the function's timeout, the 6 MB response):
 * past its timeout Lambda stops the function, logs `Task timed out after N seconds` and answers
 * an error; a result over 6 MB is an error too. In process the function cannot be stopped: its
 * late result is dropped, as Lambda's would never arrive.
 */
export async function invokeWithinLimits(invoke: () => Promise<unknown>, timeoutMs: number, requestId: string): Promise<InvocationOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const running = invoke();
  running.catch(() => undefined); // a late failure, after the timeout, has no one to tell
  const timedOut = new Promise<'timed-out'>((done) => {
    timer = setTimeout(() => done('timed-out'), timeoutMs);
  });
  try {
    const result = await Promise.race([running, timedOut]);
    if (result === 'timed-out')
      return { kind: 'timed-out', log: `${new Date().toISOString()} ${requestId} Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds` };
    const size = Buffer.byteLength(typeof result === 'string' ? result : (JSON.stringify(result) ?? ''));
    if (size > LAMBDA_MAX_PAYLOAD_BYTES)
      return {
        kind: 'payload-too-large',
        log: `${requestId} Response payload size exceeded maximum allowed payload size (${LAMBDA_MAX_PAYLOAD_BYTES} bytes).`,
      };
    return { kind: 'result', result };
  } finally {
    clearTimeout(timer);
  }
}

/** API Gateway's answer to a Lambda invocation error: 502, through the DEFAULT_5XX gateway response (infra/api-stack.ts GATEWAY_RESPONSES). */
export function lambdaErrorResult(requestId: string): APIGatewayProxyResult {
  return {
    statusCode: 502,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-request-id': requestId },
    body: JSON.stringify({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', request_id: requestId } }),
  };
}

export function writeResult(res: ServerResponse, result: APIGatewayProxyResult | string | undefined) {
  if (result === undefined || typeof result === 'string') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(result ?? '');
    return;
  }
  // setHeader (not writeHead's argument), so the access log can read them back. API Gateway
  // merges `multiValueHeaders` over `headers`.
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) res.setHeader(name, values.map(String));
  const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
  res.writeHead(result.statusCode).end(body);
}
