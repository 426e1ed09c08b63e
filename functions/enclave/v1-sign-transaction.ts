import { httpHandler } from '../../shared/http/handler.ts';
import { V1SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { signTransaction } from '../../shared/enclave/sign-transaction-operation.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v1/api/wallet/sign_transaction`: v1 form (encryption_context), until retirement. */
export const adapter = signAdapter(1, V1SignTransactionRequest, signTransaction);

export const handler = httpHandler(adapter, { jsonBody: true });
