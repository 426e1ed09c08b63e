import { policyChainsFromEnv, v2DepsFromEnv } from '../../shared/enclave/deps.ts';
import { SignDataRequest } from '../../shared/enclave/schemas.ts';
import { signData } from '../../shared/enclave/sign-operations.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeV2Signer } from './sign-adapter.ts';

/** `POST /v2/api/wallet/sign_data`: signs a 32-byte hash as given (no prefix). */
export const makeSignData = makeV2Signer('sign_data', SignDataRequest, signData);

/** Composition root (needs: table read-write, enclave wallet key, chain data for the policy). */
export const handler = httpHandler(makeSignData({ ...v2DepsFromEnv(), policyChains: policyChainsFromEnv() }), { jsonBody: true });
