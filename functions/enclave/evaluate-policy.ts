import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { loadPublicChainsConfig } from '../../shared/config.ts';
import { appsFromEnv, systemClock } from '../../shared/deps/table.ts';
import { allowedDelegatesFromEnv, policyPricesFromEnv } from '../../shared/enclave/deps.ts';
import { type EvaluationDeps, evaluateForApp } from '../../shared/enclave/policy-evaluation.ts';
import { EvaluatePolicyRequest } from '../../shared/enclave/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/**
 * `POST /v2/api/policies/evaluate`: what the app's signing policy would decide for one request
 * (a sign_* body without its authorisation, or a withdrawal), signing nothing and counting
 * nothing. App secret key only, as PUT and GET.
 */
export const makeEvaluatePolicy = (deps: EvaluationDeps & { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const { app } = await authenticateApp(deps.apps, event);
  const input = parseInput(EvaluatePolicyRequest, event.body, 'body');
  const { decision, rule_id, reason, shadow, remaining_usd_today } = await evaluateForApp(deps, app.app_id, input);
  return jsonResponse(200, { success: true, decision, rule_id, reason, ...(shadow ? { shadow } : {}), remaining_usd_today });
};

/** Composition root (needs: table read of the policy and the user's daily use, chains: chain data and native coin prices, delegates for the built-in default). */
export const handler = httpHandler(
  makeEvaluatePolicy({
    ...appsFromEnv(),
    chains: loadPublicChainsConfig(),
    prices: policyPricesFromEnv(),
    allowedDelegates: allowedDelegatesFromEnv(),
    now: systemClock,
  }),
  {
    jsonBody: true,
  },
);
