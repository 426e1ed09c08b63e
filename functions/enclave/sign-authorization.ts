import { enclaveDeps } from '../../shared/enclave/deps.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { SignAuthorizationRequest } from '../../shared/enclave/schemas.ts';
import { signAuthorization } from '../../shared/enclave/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_authorization`: an EIP-7702 authorisation to an allowed delegate (gas sponsorship). */
export const adapter = signAdapter(2, SignAuthorizationRequest, (wallet, secret, body) => signAuthorization(wallet, secret, body, enclaveDeps.allowedDelegates));

export const handler = httpHandler(adapter, { jsonBody: true });
