import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../../shared/apps/app-registry.ts';
import { audiencesOf } from '../../shared/apps/application.ts';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { appsFromEnv } from '../../shared/deps/table.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `GET /v1/identity/provider`: the app's identity provider, found by `X-SERVICE-SECRET-KEY`. */
export const makeGetIdentityProvider = (deps: { readonly apps: AppRegistry }) => async (event: APIGatewayProxyEvent) => {
  const { app } = await authenticateApp(deps.apps, event);
  const { provider_id, issuer } = app.oidc;
  // Every app has one now (registration requires it); of several, the first. Still typed nullable for older clients.
  return jsonResponse(200, { success: true, provider_id, issuer, audience: audiencesOf(app.oidc)[0] ?? null });
};

/** Composition root (needs: table read). */
export const handler = httpHandler(makeGetIdentityProvider(appsFromEnv()));
