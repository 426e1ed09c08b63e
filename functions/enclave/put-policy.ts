import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { putPolicy } from '../../shared/enclave/policy-store.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { PolicySchema } from '../../shared/policies/policy.ts';

export interface PolicyRouteDeps {
  readonly table: Table;
  readonly apps: AppRegistry;
  readonly now: () => Date;
}

/**
 * `PUT /v2/api/policies`: the app's signing policy (issue 22), as a new version. Only the app's
 * secret key may set it: never a platform service token, so neither the express service nor a
 * front end holding the API key can loosen what the enclave signs.
 */
export const makePutPolicy = (deps: PolicyRouteDeps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const { app } = await authenticateApp(deps.apps, event);
  const policy = parseInput(PolicySchema, event.body, 'body');
  const { version } = await putPolicy(deps.table, app.app_id, policy, deps.now());
  return jsonResponse(200, { success: true, version, mode: policy.mode, rules: policy.rules });
};

/** Composition root (needs: table, POLICY# written). */
export const handler = httpHandler(makePutPolicy({ ...appsFromEnv(), now: systemClock }), { jsonBody: true });
