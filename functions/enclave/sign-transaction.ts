import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { TransactionSerializable } from 'viem';
import { authenticateApp } from '../../shared/auth/authenticate.ts';
import { enclaveDeps } from '../../shared/deps/enclave.ts';
import { ValidationError } from '../../shared/errors.ts';
import { httpHandler, jsonResponse } from '../../shared/http/handler.ts';
import { parseInput } from '../../shared/http/validate.ts';
import { SignTransactionRequest } from '../../shared/wallets/schemas.ts';
import { withWalletKey } from '../../shared/wallets/use-wallet.ts';
import { signSolanaMessage } from '../../shared/wallets/solana-message.ts';
import { signEvmTransaction } from '../../shared/wallets/wallet-keys.ts';

type EvmTransactionInput = Exclude<ReturnType<typeof parseBody>['transaction'], string>;

function parseBody(body: unknown) {
  return parseInput(SignTransactionRequest, body, 'body');
}

/** Wire quantities are decimal strings; viem takes bigints. */
function toViemTransaction(tx: EvmTransactionInput): TransactionSerializable {
  const big = (value: string | undefined) => (value === undefined ? undefined : BigInt(value));
  return {
    ...tx,
    value: big(tx.value),
    gas: big(tx.gas),
    gasPrice: big(tx.gasPrice),
    maxFeePerGas: big(tx.maxFeePerGas),
    maxPriorityFeePerGas: big(tx.maxPriorityFeePerGas),
    to: tx.to as `0x${string}` | undefined,
    data: tx.data as `0x${string}` | undefined,
    accessList: tx.accessList as TransactionSerializable['accessList'],
  } as TransactionSerializable;
}

/**
 * `POST /v2/api/wallet/sign_transaction`. EVM wallets: a transaction object in, the signed
 * serialised transaction and its hash out. SOL wallets: a base64 message in, the base58
 * signature out.
 */
export const adapter = async (event: APIGatewayProxyEventV2 & { body: unknown }) => {
  const { app } = await authenticateApp(enclaveDeps.apps, event);
  const body = parseBody(event.body);
  const result = await withWalletKey(enclaveDeps, app, body, async (wallet, secret) => {
    const identity = { wallet_id: wallet.wallet_id, public_address: wallet.public_address };
    if (wallet.family === 'sol') {
      if (typeof body.transaction !== 'string') throw new ValidationError('body.transaction: a SOL wallet signs a base64 transaction message');
      return { ...identity, signature: signSolanaMessage(secret, Buffer.from(body.transaction, 'base64')).signature };
    }
    if (typeof body.transaction === 'string') throw new ValidationError('body.transaction: an EVM wallet signs a transaction object');
    try {
      return { ...identity, ...(await signEvmTransaction(secret, toViemTransaction(body.transaction))) };
    } catch (error) {
      // viem rejects inconsistent transactions (e.g. fee fields of another type) before signing.
      throw new ValidationError(`body.transaction: ${(error as Error).message.split('\n')[0]}`, 'INVALID_TRANSACTION');
    }
  });
  return jsonResponse(200, { success: true, ...result });
};

export const handler = httpHandler(adapter, { jsonBody: true });
