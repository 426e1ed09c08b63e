import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { listPolicyDecisions } from '../../shared/enclave/policy-log.ts';
import { DECISIONS_DEFAULT_LIMIT, DecisionsQuery } from '../../shared/enclave/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `GET {tee_url}/v2/api/policies/decisions?limit=`: the app's signing-policy decisions (allow,
 * deny, shadow_deny), newest first (app secret key only, as the policy itself). Kept 90 days.
 */
export const makeGetPolicyDecisions = (deps: { readonly table: Table; readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const { app } = await authenticateApp(deps.apps, event);
  const { limit = DECISIONS_DEFAULT_LIMIT } = parseInput(DecisionsQuery, event.queryStringParameters ?? {}, 'query');
  return jsonResponse(200, { success: true, decisions: await listPolicyDecisions(deps.table, app.app_id, limit) });
};

/** Composition root (needs: table read of POLICYLOG#). */
export const handler = httpHandler(makeGetPolicyDecisions(appsFromEnv()));
