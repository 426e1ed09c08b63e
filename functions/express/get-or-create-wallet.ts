import type { APIGatewayProxyEvent } from 'aws-lambda';
import { type ExpressRouteDeps, expressDepsFromEnv } from '../../shared/deps/express.ts';
import { authenticateExpressCaller } from '../../shared/express/express-caller.ts';
import { getOrCreateExpressWallet } from '../../shared/express/express-wallets.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { jsonResponse } from '../../shared/http/response.ts';

/** `POST /v2/wallet`: get or create the user's wallet for X-SERVICE-CHAIN. No body. */
export const makeGetOrCreateExpressWallet = (deps: ExpressRouteDeps) => async (event: APIGatewayProxyEvent) => {
  const caller = await authenticateExpressCaller(deps.apps, event);
  const wallet = await getOrCreateExpressWallet(deps, caller);
  return jsonResponse(200, { success: true, public_address: wallet.public_address, chain: caller.chain, wallet_id: wallet.wallet_id }, caller.responseHeaders);
};

/** Composition root (needs: table read, op_jwt key, enclave URL). */
export const handler = httpHandler(makeGetOrCreateExpressWallet(expressDepsFromEnv()));
