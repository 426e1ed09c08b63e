import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import type { Table } from '../../shared/db/client.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { allowedDelegatesFromEnv } from '../../shared/enclave/deps.ts';
import { currentPolicy } from '../../shared/enclave/policy-store.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { defaultPolicy } from '../../shared/policies/default-policy.ts';

/**
 * `GET /v2/api/policies`: the policy in force and its version; an app that never set one gets the
 * built-in default as version 0 with `built_in: true` (app secret key only, as the PUT).
 */
export const makeGetPolicy =
  (deps: { readonly table: Table; readonly apps: AppRegistry; readonly allowedDelegates: ReadonlySet<string> }) => async (event: APIGatewayProxyEvent) => {
    const { app } = await authenticateApp(deps.apps, event);
    const stored = await currentPolicy(deps.table, app.app_id);
    const { version, policy } = stored ?? { version: 0, policy: defaultPolicy(deps.allowedDelegates) };
    return jsonResponse(200, { success: true, version, mode: policy.mode, rules: policy.rules, built_in: stored === undefined });
  };

/** Composition root (needs: table read, delegates for the built-in default's express rule). */
export const handler = httpHandler(makeGetPolicy({ ...appsFromEnv(), allowedDelegates: allowedDelegatesFromEnv() }));
