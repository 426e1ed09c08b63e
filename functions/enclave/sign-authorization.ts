import { enclaveDeps } from '../../shared/deps/enclave.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { SignAuthorizationRequest } from '../../shared/wallets/schemas.ts';
import { signAuthorization } from '../../shared/wallets/sign-operations.ts';
import { signAdapter } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_authorization`: an EIP-7702 authorisation to an allowed delegate (gas sponsorship). */
export const adapter = signAdapter(2, SignAuthorizationRequest, (wallet, secret, body) => signAuthorization(wallet, secret, body, enclaveDeps.allowedDelegates));

export const handler = httpHandler(adapter, { jsonBody: true });
