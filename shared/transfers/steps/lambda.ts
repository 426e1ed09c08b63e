import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { serviceLogger } from '../../logger.ts';

/**
 * A step-function Lambda (not behind API Gateway): middy with the Powertools logger's Lambda
 * context. The event is never logged (it names the task only, but the rule is uniform); errors
 * keep their `name`, which the state machine's Retry and Catch match on.
 */
export function stepHandler<E, R>(work: (event: E) => Promise<R>) {
  return middy<E, R, Error, Context>(async (event: E) => work(event)).use(injectLambdaContext(serviceLogger(), { resetKeys: true, logEvent: false }));
}
