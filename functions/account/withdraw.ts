import type { APIGatewayProxyEvent } from 'aws-lambda';
import * as v from 'valibot';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateUser, header } from '../../shared/auth/authenticate.ts';
import { withdrawDepsFromEnv } from '../../shared/deps/account-chains.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { measureWithdrawal } from '../../shared/observability/metrics.ts';
import { type WithdrawDeps, withdraw } from '../../shared/withdrawals/withdraw.ts';
import { WithdrawRequest } from '../../shared/withdrawals/withdraw-rules.ts';

const IdempotencyKey = v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9._:-]{8,128}$/, 'must be 8-128 characters of letters, digits, ".", "_", ":" or "-"')));

export type WithdrawRouteDeps = WithdrawDeps & { readonly apps: AppRegistry };

/**
 * `POST /withdraw`: send from the user's wallet to an external address. `Idempotency-Key` makes
 * retries safe; `Server-Timing` reports signing, broadcast and inclusion times.
 */
export const makeWithdraw = (deps: WithdrawRouteDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const user = await authenticateUser(deps.apps, event);
  const body = parseInput(WithdrawRequest, event.body, 'body');
  const idempotencyKey = parseInput(v.object({ 'idempotency-key': IdempotencyKey }), { 'idempotency-key': header(event, 'idempotency-key') }, 'header')[
    'idempotency-key'
  ];
  const { response, timings, replayed } = await measureWithdrawal(body.chain, () => withdraw(deps, user, body, idempotencyKey));
  const serverTiming = `sign;dur=${timings.sign.toFixed(1)}, broadcast;dur=${timings.broadcast.toFixed(1)}, inclusion;dur=${timings.inclusion.toFixed(1)}`;
  return jsonResponse(response.status, response.body, { 'server-timing': serverTiming, ...(replayed ? { 'idempotent-replayed': 'true' } : {}) });
};

/** Composition root (needs: table read-write, account access key Decrypt, op_jwt key, enclave URL, chains). */
export const handler = httpHandler(makeWithdraw(withdrawDepsFromEnv()), { jsonBody: true });
