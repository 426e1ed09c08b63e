import type { APIGatewayProxyEvent } from 'aws-lambda';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import { verifyUserJwt } from '../../shared/auth/jwt.ts';
import { type V1Deps, v1DepsFromEnv } from '../../shared/enclave/deps.ts';
import { V1CreateWalletRequest } from '../../shared/enclave/schemas.ts';
import { assertV1Open, createV1Wallet } from '../../shared/enclave/v1-wallets.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/** `POST /v1/api/wallet`: legacy creation under an encryption_context (optionally for an `auth_jwt` user); 410 V1_RETIRED after retirement. */
export const makeV1CreateWallet = (deps: V1Deps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  assertV1Open(deps);
  const app = await authenticateEnclaveCaller(deps.apps, event, deps.now());
  const body = parseInput(V1CreateWalletRequest, event.body, 'body');
  // Optional: the user the wallet is created for, and so the only one it may migrate to (issue 21 §8).
  const identity = body.auth_jwt === undefined ? undefined : await verifyUserJwt(app, body.auth_jwt, deps.now());
  const wallet = await createV1Wallet(deps, {
    app,
    encryptionContext: body.encryption_context,
    network: body.network,
    walletGroupId: body.wallet_group_id,
    ...(identity ? { identity: { iss: identity.iss, sub: identity.sub } } : {}),
  });
  return jsonResponse(200, { success: true, ...wallet });
};

/** Composition root (needs: table read-write; the wallet is sealed under the encryption_context, no KMS). */
export const handler = httpHandler(makeV1CreateWallet(v1DepsFromEnv()), { jsonBody: true });
