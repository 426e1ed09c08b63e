import { allowedDelegatesFromEnv, policyChainsFromEnv, type V2Deps, v2DepsFromEnv } from '../../shared/enclave/deps.ts';
import { SignAuthorizationRequest } from '../../shared/enclave/schemas.ts';
import { signAuthorization } from '../../shared/enclave/sign-operations.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import type { PolicyChains } from '../../shared/policies/facts.ts';
import { makeV2Signer } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_authorization`: an EIP-7702 authorisation to an allowed delegate (gas sponsorship). */
export const makeSignAuthorization = (deps: V2Deps & { readonly allowedDelegates: ReadonlySet<string>; readonly policyChains?: PolicyChains }) =>
  makeV2Signer(
    'sign_authorization',
    SignAuthorizationRequest,
    (wallet, secret, body) => signAuthorization(wallet, secret, body, deps.allowedDelegates),
    deps.allowedDelegates,
  )(deps);

/** Composition root (needs: table read-write, enclave wallet key, delegates, chain data for the policy). */
export const handler = httpHandler(
  makeSignAuthorization({ ...v2DepsFromEnv(), allowedDelegates: allowedDelegatesFromEnv(), policyChains: policyChainsFromEnv() }),
  { jsonBody: true },
);
