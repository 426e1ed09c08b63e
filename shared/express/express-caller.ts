import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import { bearerToken, header } from '../auth/authenticate.ts';
import { type Identity, verifyUserJwt } from '../auth/jwt.ts';
import { ForbiddenError, UnauthorizedError, ValidationError } from '../errors.ts';
import { CHAIN_CODES, type ChainCode } from '../wallets/networks.ts';

/** When the iframe-based login was deprecated (spec, Versioning): RFC 9745 Deprecation header. */
export const LEGACY_LOGIN_DEPRECATED_AT = '2026-07-31T00:00:00Z';
const DEPRECATION_HEADER = `@${Math.floor(Date.parse(LEGACY_LOGIN_DEPRECATED_AT) / 1000)}`;

/** The app behind `X-SERVICE-API-KEY`. 401 when missing or unknown. */
export async function authenticateApiKey(registry: AppRegistry, event: Pick<APIGatewayProxyEvent, 'headers'>): Promise<Application> {
  const apiKey = header(event, 'x-service-api-key');
  if (!apiKey) throw new UnauthorizedError('MISSING_API_KEY', 'X-SERVICE-API-KEY header is required');
  const app = await registry.findByApiKey(apiKey);
  if (!app) throw new UnauthorizedError('INVALID_API_KEY', 'X-SERVICE-API-KEY is not valid');
  return app;
}

export interface ExpressCaller {
  readonly app: Application;
  readonly identity: Identity;
  /** The user's JWT, forwarded to the enclave as `auth_jwt`; never stored or logged. */
  readonly token: string;
  readonly chain: ChainCode;
  /** Headers every response carries: `Deprecation` when a legacy provider id was used. */
  readonly responseHeaders: Record<string, string>;
}

/**
 * Express wallet authentication (spec, Authentication): the API key names the app, the provider
 * id must be that app's (or one of its legacy ids), the Bearer JWT must verify against that
 * provider, and X-SERVICE-CHAIN must be a chain code.
 */
export async function authenticateExpressCaller(registry: AppRegistry, event: Pick<APIGatewayProxyEvent, 'headers'>): Promise<ExpressCaller> {
  const app = await authenticateApiKey(registry, event);
  const providerId = header(event, 'x-oidc-provider-id');
  if (!providerId) throw new ValidationError('header X-OIDC-Provider-ID: is required', 'MISSING_PROVIDER_ID');
  const legacy = app.legacy_provider_ids?.includes(providerId) ?? false;
  if (providerId !== app.oidc.provider_id && !legacy) {
    throw new ForbiddenError('PROVIDER_MISMATCH', 'X-OIDC-Provider-ID is not the identity provider of this application');
  }
  const token = bearerToken(event);
  const identity = await verifyUserJwt(app, token);
  const chain = header(event, 'x-service-chain');
  if (!chain || !(CHAIN_CODES as readonly string[]).includes(chain)) {
    throw new ValidationError(`header X-SERVICE-CHAIN: must be one of ${CHAIN_CODES.join(', ')}`, 'INVALID_CHAIN');
  }
  return { app, identity, token, chain: chain as ChainCode, responseHeaders: legacy ? { deprecation: DEPRECATION_HEADER } : {} };
}
