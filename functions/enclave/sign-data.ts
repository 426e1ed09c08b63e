import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { enclaveDeps } from '../../shared/deps/enclave.ts';
import { httpHandler, jsonResponse } from '../../shared/http/handler.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { SignDataRequest } from '../../shared/wallets/schemas.ts';
import { withWalletKey } from '../../shared/wallets/use-wallet.ts';
import { signHash } from '../../shared/wallets/wallet-keys.ts';

/** `POST /v2/api/wallet/sign_data`: signs a 32-byte hash as given (no prefix). */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  const { app } = await authenticateApp(enclaveDeps.apps, event);
  const body = parseInput(SignDataRequest, event.body, 'body');
  const result = await withWalletKey(enclaveDeps, app, body, async (wallet, secret) => ({
    wallet_id: wallet.wallet_id,
    public_address: wallet.public_address,
    signature: await signHash(wallet.family, secret, body.raw_data_hash as `0x${string}`),
  }));
  return jsonResponse(200, { success: true, ...result });
};

export const handler = httpHandler(adapter, { jsonBody: true });
