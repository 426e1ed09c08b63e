import { ExpressSignMessageRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { expressSignAdapter } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/message`: the enclave's sign_message with the user's wallet for X-SERVICE-CHAIN. */
export const adapter = expressSignAdapter('sign_message', ExpressSignMessageRequest);

export const handler = httpHandler(adapter, { jsonBody: true });
