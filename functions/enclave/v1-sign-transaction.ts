import { v1DepsFromEnv } from '../../shared/enclave/deps.ts';
import { V1SignTransactionRequest } from '../../shared/enclave/schemas.ts';
import { signTransaction } from '../../shared/enclave/sign-transaction-operation.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeV1Signer } from './sign-adapter.ts';

/** `POST /v1/api/wallet/sign_transaction`: v1 form (encryption_context), until retirement. */
export const makeV1SignTransaction = makeV1Signer(V1SignTransactionRequest, signTransaction);

/** Composition root (needs: table read; the key derives from the caller's encryption_context, no KMS). */
export const handler = httpHandler(makeV1SignTransaction(v1DepsFromEnv()), { jsonBody: true });
