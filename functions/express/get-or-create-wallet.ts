import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { expressDeps } from '../../shared/deps/express.ts';
import { authenticateExpressCaller } from '../../shared/express/express-caller.ts';
import { getOrCreateExpressWallet } from '../../shared/express/express-wallets.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `POST /v2/wallet`: get or create the user's wallet for X-SERVICE-CHAIN. No body. */
export const adapter = async (event: APIGatewayProxyEventV2) => {
  const caller = await authenticateExpressCaller(expressDeps.apps, event);
  const wallet = await getOrCreateExpressWallet(expressDeps, caller);
  return jsonResponse(200, { success: true, public_address: wallet.public_address, chain: caller.chain, wallet_id: wallet.wallet_id }, caller.responseHeaders);
};

export const handler = httpHandler(adapter);
