import type middy from '@middy/core';
import { DomainError } from '../errors.ts';
import { logger } from '../logger.ts';
import { jsonResponse } from './response.ts';

const BODY_PARSER = '@middy/http-json-body-parser';

interface MiddyHttpError {
  statusCode?: number;
  cause?: { package?: string };
}

/** Maps a thrown error to a JSON error response. Unknown errors become a bare 500. */
export function toErrorResponse(error: unknown) {
  if (error instanceof DomainError) {
    return jsonResponse(error.status, { success: false, error: { code: error.code, message: error.message } });
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
  return jsonResponse(500, { success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
}

export function errorHandler(): middy.MiddlewareObj {
  return {
    onError: async (request) => {
      request.response = toErrorResponse(request.error);
    },
  };
}
