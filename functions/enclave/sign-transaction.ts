import { httpHandler } from '../../shared/http/handler.ts';
import { SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { signTransaction } from '../../shared/enclave/sign-transaction-operation.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_transaction`: an EVM transaction object, or a base64 Solana message. */
export const adapter = signAdapter(2, SignTransactionRequest, signTransaction);

export const handler = httpHandler(adapter, { jsonBody: true });
