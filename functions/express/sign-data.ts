import { ExpressSignDataRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { expressSignAdapter } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/data`: the enclave's sign_data with the user's wallet for X-SERVICE-CHAIN. */
export const adapter = expressSignAdapter('sign_data', ExpressSignDataRequest);

export const handler = httpHandler(adapter, { jsonBody: true });
