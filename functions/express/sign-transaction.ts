import { expressDepsFromEnv } from '../../shared/deps/express.ts';
import { ExpressSignTransactionRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeExpressSigner } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/transaction`: the enclave's sign_transaction with the user's wallet for X-SERVICE-CHAIN. */
export const makeExpressSignTransaction = makeExpressSigner('sign_transaction', ExpressSignTransactionRequest);

/** Composition root (needs: table read, op_jwt key, enclave URL). */
export const handler = httpHandler(makeExpressSignTransaction(expressDepsFromEnv()), { jsonBody: true });
