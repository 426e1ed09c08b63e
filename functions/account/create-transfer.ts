import type { APIGatewayProxyEvent } from 'aws-lambda';
import * as v from 'valibot';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser, header } from '../../shared/auth/authenticate.ts';
import { transferDepsFromEnv } from '../../shared/deps/transfers.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { TransferRequest } from '../../shared/transfers/schemas.ts';
import { createTransfer, type TransferServiceDeps } from '../../shared/transfers/service.ts';

/** The same header rule as POST /withdraw. */
export const IdempotencyKeyHeader = v.object({
  'idempotency-key': v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{8,128}$/, 'must be 8-128 characters of letters, digits, ".", "_", ":" or "-"'))),
});

/**
 * `POST /transfer`: 202 with `{success, task_id, message}` and `X-Task-ID`; execution is
 * asynchronous (GET /task/{id}). `Idempotency-Key`: a retry returns the same task
 * (`Idempotent-Replayed: true`).
 */
export const makeCreateTransfer = (deps: TransferServiceDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const body = parseInput(TransferRequest, event.body, 'body');
  const idempotencyKey = parseInput(IdempotencyKeyHeader, { 'idempotency-key': header(event, 'idempotency-key') }, 'header')['idempotency-key'];
  const { status, body: response, replayed } = await createTransfer(deps, user, body, idempotencyKey);
  return jsonResponse(status, response, { 'x-task-id': response.task_id, ...(replayed ? { 'idempotent-replayed': 'true' } : {}) });
};

/** Composition root (needs: table read-write, chains, bridge, platformFee, transfers). */
export const handler = httpHandler(makeCreateTransfer(transferDepsFromEnv()), { jsonBody: true });
