import type middy from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { DomainError } from '../errors.ts';
import { logger } from '../logger.ts';
import { REQUEST_ID_KEY, requestIdOf } from './request-id.ts';
import { jsonResponse } from './response.ts';

const BODY_PARSER = '@middy/http-json-body-parser';

interface MiddyHttpError {
  statusCode?: number;
  /** `data`: the key for a refused key (no `message`); the body for a parse failure (with `message`). */
  cause?: { package?: string; data?: unknown; message?: string };
}

/**
 * The keys the body parser refuses at any depth (@middy/util `jsonParseProtectProto`): `__proto__`,
 * and `constructor` holding an object with a `prototype`: a key-by-key merge of the first sets an
 * object's prototype, of the second writes to Object.prototype. Valid JSON, so a 400 naming the
 * key rather than INVALID_JSON.
 */
const REFUSED_KEYS = new Map([
  ['__proto__', 'body: a key named "__proto__" is not allowed (at any depth)'],
  ['constructor', 'body: a key named "constructor" holding an object with a "prototype" key is not allowed (at any depth)'],
]);

function refusedKeyMessage(cause: MiddyHttpError['cause']): string | undefined {
  if (cause?.message !== undefined || typeof cause?.data !== 'string') return undefined;
  return REFUSED_KEYS.get(cause.data);
}

/**
 * Maps a thrown error to a JSON error response. Unknown errors become a bare 500 that names only
 * the request id (so a user can quote it); the error itself goes to the log, redacted.
 */
export function toErrorResponse(error: unknown, requestId?: string) {
  if (error instanceof DomainError) {
    const headers: Record<string, string> = error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) };
    return jsonResponse(error.status, { success: false, error: { code: error.code, message: error.message, ...error.fields } }, headers);
  }
  const httpError = error as MiddyHttpError;
  if (httpError?.cause?.package === BODY_PARSER) {
    if (httpError.statusCode === 415) {
      return jsonResponse(415, {
        success: false,
        error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' },
      });
    }
    const refused = refusedKeyMessage(httpError.cause);
    if (refused) return jsonResponse(400, { success: false, error: { code: 'INVALID_REQUEST', message: refused } });
    return jsonResponse(400, { success: false, error: { code: 'INVALID_JSON', message: 'The request body is not valid JSON' } });
  }
  logger.error('unhandled error', { error });
  return jsonResponse(500, {
    success: false,
    error: { code: 'INTERNAL_ERROR', message: 'Internal server error', ...(requestId ? { request_id: requestId } : {}) },
  });
}

/** What `observability()` leaves in middy's `request.internal`. */
type Internal = { readonly [REQUEST_ID_KEY]?: string };

export function errorHandler(): middy.MiddlewareObj<APIGatewayProxyEvent, unknown, Error, Context, Internal> {
  return {
    onError: async (request) => {
      const requestId = request.internal?.[REQUEST_ID_KEY] ?? requestIdOf(request.event, request.context);
      request.response = toErrorResponse(request.error, requestId);
    },
  };
}
