import type { APIGatewayProxyEvent } from 'aws-lambda';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import { verifyUserJwt } from '../../shared/auth/jwt.ts';
import { createWallet } from '../../shared/enclave/create-wallet.ts';
import { type V2Deps, v2DepsFromEnv } from '../../shared/enclave/deps.ts';
import { CreateWalletRequest } from '../../shared/enclave/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';

/** `POST /v2/api/wallet`: get-or-create a wallet bound to the `auth_jwt` identity. */
export const makeCreateWallet = (deps: V2Deps) => async (event: APIGatewayProxyEvent & { body: unknown }) => {
  const app = await authenticateEnclaveCaller(deps.apps, event, deps.now());
  const body = parseInput(CreateWalletRequest, event.body, 'body');
  const identity = await verifyUserJwt(app, body.auth_jwt, deps.now());
  const wallet = await createWallet(deps, { app, identity, network: body.network, walletGroupId: body.wallet_group_id });
  return jsonResponse(200, { success: true, ...wallet });
};

/** Composition root (needs: table read-write, enclave wallet key). */
export const handler = httpHandler(makeCreateWallet(v2DepsFromEnv()), { jsonBody: true });
