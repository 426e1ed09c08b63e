import { expressDepsFromEnv } from '../../shared/deps/express.ts';
import { ExpressSignDataRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeExpressSigner } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/data`: the enclave's sign_data with the user's wallet for X-SERVICE-CHAIN. */
export const makeExpressSignData = makeExpressSigner('sign_data', ExpressSignDataRequest);

/** Composition root (needs: table read, op_jwt key, enclave URL). */
export const handler = httpHandler(makeExpressSignData(expressDepsFromEnv()), { jsonBody: true });
