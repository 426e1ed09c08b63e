import { policyChainsFromEnv, policyPricesFromEnv, v2DepsFromEnv } from '../../shared/enclave/deps.ts';
import { SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { signTransaction } from '../../shared/enclave/sign-transaction-operation.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeV2Signer } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_transaction`: an EVM transaction object, or a base64 Solana message. */
export const makeSignTransaction = makeV2Signer('sign_transaction', SignTransactionRequest, signTransaction);

/** Composition root (needs: table read-write, enclave wallet key, chains: chain data and native coin prices for the policy). */
export const handler = httpHandler(makeSignTransaction({ ...v2DepsFromEnv(), policyChains: policyChainsFromEnv(), policyPrices: policyPricesFromEnv() }), {
  jsonBody: true,
});
