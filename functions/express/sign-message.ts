import { expressDepsFromEnv } from '../../shared/deps/express.ts';
import { ExpressSignMessageRequest } from '../../shared/express/schemas.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeExpressSigner } from './sign-adapter.ts';

/** `POST /v2/wallet/sign/message`: the enclave's sign_message with the user's wallet for X-SERVICE-CHAIN. */
export const makeExpressSignMessage = makeExpressSigner('sign_message', ExpressSignMessageRequest);

/** Composition root (needs: table read, op_jwt key, enclave URL). */
export const handler = httpHandler(makeExpressSignMessage(expressDepsFromEnv()), { jsonBody: true });
