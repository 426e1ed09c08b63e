import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import { verifyUserJwt } from '../../shared/auth/jwt.ts';
import { enclaveDeps } from '../../shared/enclave/deps.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { createWallet } from '../../shared/enclave/create-wallet.ts';
import { CreateWalletRequest } from '../../shared/enclave/schemas.ts';

/** `POST /v2/api/wallet`: get-or-create a wallet bound to the `auth_jwt` identity. */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  const app = await authenticateEnclaveCaller(enclaveDeps.apps, event, enclaveDeps.now());
  const body = parseInput(CreateWalletRequest, event.body, 'body');
  const identity = await verifyUserJwt(app, body.auth_jwt, enclaveDeps.now());
  const wallet = await createWallet(enclaveDeps, { app, identity, network: body.network, walletGroupId: body.wallet_group_id });
  return jsonResponse(200, { success: true, ...wallet });
};

export const handler = httpHandler(adapter, { jsonBody: true });
