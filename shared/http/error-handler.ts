import type middy from '@middy/core';
import { DomainError } from '../errors.ts';
import { logger } from '../logger.ts';
import { REQUEST_ID_KEY, requestIdOf } from './request-id.ts';
import { jsonResponse } from './response.ts';

const BODY_PARSER = '@middy/http-json-body-parser';

interface MiddyHttpError {
  statusCode?: number;
  cause?: { package?: string };
}

/**
 * Maps a thrown error to a JSON error response. Unknown errors become a bare 500 that names only
 * the request id (so a user can quote it); the error itself goes to the log, redacted.
 */
export function toErrorResponse(error: unknown, requestId?: string) {
  if (error instanceof DomainError) {
    const headers: Record<string, string> = error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) };
    return jsonResponse(error.status, { success: false, error: { code: error.code, message: error.message } }, headers);
  }
  const httpError = error as MiddyHttpError;
  if (httpError?.cause?.package === BODY_PARSER) {
    if (httpError.statusCode === 415) {
      return jsonResponse(415, {
        success: false,
        error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' },
      });
    }
    return jsonResponse(400, { success: false, error: { code: 'INVALID_JSON', message: 'The request body is not valid JSON' } });
  }
  logger.error('unhandled error', { error });
  return jsonResponse(500, {
    success: false,
    error: { code: 'INTERNAL_ERROR', message: 'Internal server error', ...(requestId ? { request_id: requestId } : {}) },
  });
}

export function errorHandler(): middy.MiddlewareObj {
  return {
    onError: async (request) => {
      const requestId = ((request.internal as Record<string, unknown> | undefined)?.[REQUEST_ID_KEY] as string | undefined) ?? requestIdOf(request.event as never, request.context as never);
      request.response = toErrorResponse(request.error, requestId);
    },
  };
}
