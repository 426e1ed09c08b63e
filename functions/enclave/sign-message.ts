import { policyChainsFromEnv, v2DepsFromEnv } from '../../shared/enclave/deps.ts';
import { SignMessageRequest } from '../../shared/enclave/schemas.ts';
import { signMessage } from '../../shared/enclave/sign-operations.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeV2Signer } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_message`: EIP-191 personal message (EVM) or raw bytes (SOL). */
export const makeSignMessage = makeV2Signer('sign_message', SignMessageRequest, signMessage);

/** Composition root (needs: table read-write, enclave wallet key, chain data for the policy). */
export const handler = httpHandler(makeSignMessage({ ...v2DepsFromEnv(), policyChains: policyChainsFromEnv() }), { jsonBody: true });
