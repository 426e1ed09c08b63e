import { ExpressSignTransactionRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { expressSignAdapter } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/transaction`: the enclave's sign_transaction with the user's wallet for X-SERVICE-CHAIN. */
export const adapter = expressSignAdapter('sign_transaction', ExpressSignTransactionRequest);

export const handler = httpHandler(adapter, { jsonBody: true });
