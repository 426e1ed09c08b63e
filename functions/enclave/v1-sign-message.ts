import { v1DepsFromEnv } from '../../shared/enclave/deps.ts';
import { V1SignMessageRequest } from '../../shared/enclave/schemas.ts';
import { signMessage } from '../../shared/enclave/sign-operations.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { makeV1Signer } from './sign-adapter.ts';

/** `POST /v1/api/wallet/sign_message`: v1 form (encryption_context), until retirement. */
export const makeV1SignMessage = makeV1Signer(V1SignMessageRequest, signMessage);

/** Composition root (needs: table read; the key derives from the caller's encryption_context, no KMS). */
export const handler = httpHandler(makeV1SignMessage(v1DepsFromEnv()), { jsonBody: true });
