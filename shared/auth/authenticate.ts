import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { AppRegistry } from '../apps/app-registry.ts';
import type { Application } from '../apps/application.ts';
import { UnauthorizedError } from '../errors.ts';
import { type Identity, verifyUserJwt } from './jwt.ts';
import { SERVICE_TOKEN_HEADER, verifyServiceToken } from './service-token.ts';

/** API Gateway HTTP APIs lower-case header names; this reads one regardless of case. */
export function header(event: Pick<APIGatewayProxyEvent, 'headers'>, name: string): string | undefined {
  const value = event.headers?.[name.toLowerCase()];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Enclave app authentication: `x-service-secret-key` (spec), or a platform service token
 * (shared/auth/service-token.ts) from the express service, which does not hold the secret.
 */
export async function authenticateEnclaveCaller(registry: AppRegistry, event: Pick<APIGatewayProxyEvent, 'headers'>, now?: Date): Promise<Application> {
  const serviceToken = header(event, SERVICE_TOKEN_HEADER);
  if (serviceToken && !header(event, 'x-service-secret-key')) return verifyServiceToken(registry, serviceToken, now);
  return (await authenticateApp(registry, event)).app;
}

/** Resolves the app from `X-SERVICE-SECRET-KEY`. 401 when missing or unknown. */
export async function authenticateApp(registry: AppRegistry, event: Pick<APIGatewayProxyEvent, 'headers'>): Promise<{ app: Application; secretKey: string }> {
  const secretKey = header(event, 'x-service-secret-key');
  if (!secretKey) throw new UnauthorizedError('MISSING_SECRET_KEY', 'X-SERVICE-SECRET-KEY header is required');
  const app = await registry.findBySecretKey(secretKey);
  if (!app) throw new UnauthorizedError('INVALID_SECRET_KEY', 'X-SERVICE-SECRET-KEY is not valid');
  return { app, secretKey };
}

export function bearerToken(event: Pick<APIGatewayProxyEvent, 'headers'>): string {
  const authorization = header(event, 'authorization');
  if (!authorization) throw new UnauthorizedError('MISSING_TOKEN', 'Authorization: Bearer <JWT> header is required');
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!match?.[1]) throw new UnauthorizedError('MISSING_TOKEN', 'Authorization header must be "Bearer <JWT>"');
  return match[1];
}

export interface AuthenticatedUser {
  readonly app: Application;
  readonly secretKey: string;
  readonly identity: Identity;
  /** The user's JWT, forwarded to the enclave as `auth_jwt`; never stored or logged. */
  readonly token: string;
}

/** Account-service authentication: app secret header plus the user's JWT from that app's provider. */
export async function authenticateUser(registry: AppRegistry, event: Pick<APIGatewayProxyEvent, 'headers'>): Promise<AuthenticatedUser> {
  const { app, secretKey } = await authenticateApp(registry, event);
  const token = bearerToken(event);
  const identity = await verifyUserJwt(app, token);
  return { app, secretKey, identity, token };
}
