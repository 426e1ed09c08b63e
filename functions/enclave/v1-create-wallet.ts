import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticateEnclaveCaller } from '../../shared/auth/authenticate.ts';
import { enclaveDeps } from '../../shared/enclave/deps.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { V1CreateWalletRequest } from '../../shared/enclave/schemas.ts';
import { assertV1Open, createV1Wallet } from '../../shared/enclave/v1-wallets.ts';

/** `POST /v1/api/wallet`: legacy creation under an encryption_context; 410 V1_RETIRED after retirement. */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  assertV1Open(enclaveDeps);
  const app = await authenticateEnclaveCaller(enclaveDeps.apps, event, enclaveDeps.now());
  const body = parseInput(V1CreateWalletRequest, event.body, 'body');
  const wallet = await createV1Wallet(enclaveDeps, { app, encryptionContext: body.encryption_context, network: body.network, walletGroupId: body.wallet_group_id });
  return jsonResponse(200, { success: true, ...wallet });
};

export const handler = httpHandler(adapter, { jsonBody: true });
