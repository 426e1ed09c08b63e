import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { enclaveDeps } from '../../shared/deps/enclave.ts';
import { ValidationError } from '../../shared/errors.ts';
import { httpHandler, jsonResponse } from '../../shared/http/handler.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { SignMessageRequest } from '../../shared/wallets/schemas.ts';
import { withWalletKey } from '../../shared/wallets/use-wallet.ts';
import { signMessageBytes } from '../../shared/wallets/wallet-keys.ts';

function messageBytes(message: string, encoding: 'utf8' | 'hex'): Buffer {
  if (encoding === 'utf8') return Buffer.from(message, 'utf8');
  if (!/^0x([0-9a-fA-F]{2})+$/.test(message)) throw new ValidationError('body.message: must be 0x-prefixed hex bytes when encoding is "hex"');
  return Buffer.from(message.slice(2), 'hex');
}

/** `POST /v2/api/wallet/sign_message`: EIP-191 personal message (EVM) or raw bytes (SOL). */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  const { app } = await authenticateApp(enclaveDeps.apps, event);
  const body = parseInput(SignMessageRequest, event.body, 'body');
  const bytes = messageBytes(body.message, body.encoding);
  const result = await withWalletKey(enclaveDeps, app, body, async (wallet, secret) => ({
    wallet_id: wallet.wallet_id,
    public_address: wallet.public_address,
    signature: await signMessageBytes(wallet.family, secret, bytes),
  }));
  return jsonResponse(200, { success: true, ...result });
};

export const handler = httpHandler(adapter, { jsonBody: true });
