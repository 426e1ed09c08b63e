import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { expressDeps } from '../../shared/deps/express.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `GET /v1/identity/provider`: the app's identity provider, found by `X-SERVICE-SECRET-KEY`. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  const { app } = await authenticateApp(expressDeps.apps, event);
  const { provider_id, issuer, audience } = app.oidc;
  return jsonResponse(200, { success: true, provider_id, issuer, audience: audience ?? null });
};

export const handler = httpHandler(adapter);
